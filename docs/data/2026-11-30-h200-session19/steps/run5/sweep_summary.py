#!/usr/bin/env python3
# Run 5 summary: per shape, each program's speed relative to the routed program of e39a81e
# (t1024 / ct), mean of the given routing JSONs (CUPTI kernel time). Usage: sweep_summary.py routing1.json routing2.json
import json,sys,collections
files=sys.argv[1:]
T=collections.defaultdict(lambda: collections.defaultdict(list))
for f in files:
    for r in json.load(open(f))['routing']:
        if r['form']=='fwd': continue
        for p in r['programs']:
            T[(r['form'],r['shape'])][p['name'].replace('sm90.ng_bwd_','')].append(p['time']['median_us'])
def key(s):
    t,rest=s[1].split('x'); h,d=rest.split(':') if ':' in rest else (rest,'128'); return (s[0][:10],int(d),int(t))
for form in ['bwd_nondet_bf16','bwd_det_bf16']:
  for d in (128,64):
    cols=None
    for k in sorted(T,key=key):
        if not k[0]==form: continue
        kk=key(k)
        if kk[1]!=d: continue
        progs={n:sum(v)/len(v) for n,v in T[k].items() if 'general' not in n}
        if cols is None:
            cols=sorted(progs); print(form,d,' rows/SM ', ' '.join('%12s'%c.replace('_d%d'%d,'')[-12:] for c in cols))
        base=progs[[c for c in cols if c.endswith('t1024') or c.endswith('_ct') ][0]]
        rps=kk[2]*48/132
        print('%5d %6.0f '%(kk[2],rps)+' '.join('%12.3f'%(base/progs[c]) for c in cols), ' base %.2f'%base)
