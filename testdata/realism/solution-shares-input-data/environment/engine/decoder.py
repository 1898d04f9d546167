def decode(line):
    return dict(kv.split('=') for kv in line.split())
