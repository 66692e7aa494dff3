"""The ``ndcg-eval`` command line: the parser (:mod:`.main`) and one module per command."""
