"""The pages' templates: each compiles, and a value a page names but is not given stops the
render with its name instead of printing a blank."""

from __future__ import annotations

import jinja2
import pytest

from evaluation_pipeline.report.templating import ENVIRONMENT, render


def test_every_template_compiles():
    names = ENVIRONMENT.list_templates()
    assert {"page.html", "report.html", "trace.html", "night_trace.html", "trend.html"} <= set(
        names)
    for name in names:
        ENVIRONMENT.get_template(name)


def test_a_missing_value_stops_the_page():
    with pytest.raises(jinja2.UndefinedError, match="'nights' is undefined"):
        render("trend.html", title="NDCG night by night", sections=[])


def test_a_value_is_text():
    page = render("trend.html", title='a <b> & "c"', nights=None, sections=[])
    assert "<title>a &lt;b&gt; &amp; &#34;c&#34;</title>" in page
