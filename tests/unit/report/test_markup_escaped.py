"""Text that users supply (query text, query and ranker names) is shown as text on the night's
page: markup in it is escaped, never run or rendered."""

from __future__ import annotations

from evaluation_pipeline.report.night_html import movers
from evaluation_pipeline.report.templating import ENVIRONMENT

MARKUP = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def test_markup_in_query_text_ids_and_ranker_names_is_escaped():
    listed = [{"ranker": f"dense{MARKUP}", "cutoff": 10, "mean_difference": -0.1, "movers": [
        {"query_id": f"q1{MARKUP}", "query_text": f"shoes {MARKUP}", "ndcg_previous": 0.9,
         "ndcg_current": 0.1, "difference": -0.8, "trace": f'traces/q1".html{MARKUP}'}]}]
    page = str(ENVIRONMENT.get_template("night.html").module.movers(movers(listed)))
    assert "<script" not in page and "<img" not in page
    assert page.count("&lt;script&gt;") == 4
    assert 'href="traces/q1&#34;.html' in page
