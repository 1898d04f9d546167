def test_lr():
    assert 'LR = 0.01' in open('/app/train.py').read()
