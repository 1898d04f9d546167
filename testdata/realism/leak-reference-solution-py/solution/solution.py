def peek(stack):
    if not stack:
        raise IndexError('empty')
    return stack[-1]
