import json, sys
res = json.load(open('/app/out.json'))
open('/logs/verifier/reward.txt', 'w').write('1' if res.get('ok') else '0')
