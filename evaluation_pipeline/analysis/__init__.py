"""Tools over results: reconcile with other tools, diff two results, explain one query, judged
coverage."""
