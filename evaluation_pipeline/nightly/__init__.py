"""The nightly watch: verdicts against the previous night, the history table, attribution,
alerts."""
