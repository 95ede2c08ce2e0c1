"""Service: ``/metrics`` labels come from fixed sets."""


def test_made_up_methods_and_paths_do_not_grow_metrics(http):
    before = len(http.get("/metrics").text)
    for i in range(50):
        http.request(f"FAKE{i}", f"/nowhere/{i}")
        http.get(f"/no/such/path/{i}")
    text = http.get("/metrics").text
    assert "FAKE" not in text and "/no/such" not in text
    assert len(text) < before + 5_000
