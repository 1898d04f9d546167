import collections, json, sys
c = collections.Counter(l.split()[0][5:] for l in open(sys.argv[1]))
print(json.dumps(c))
