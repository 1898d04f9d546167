def test_health():
    from app import app
    assert app.test_client().get('/health').json == {"status": "ok"}
