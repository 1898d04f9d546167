import sys
print('patch a')
