class Full(Exception):
    pass
