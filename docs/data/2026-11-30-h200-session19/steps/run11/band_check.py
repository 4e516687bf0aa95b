#!/usr/bin/env python3
# Run 11: the wave-band rule (2 <= W < 5, last wave 15-50% full, W = base units / 132) against
# the measured ratio routed-program time / four-stage-program time, per form and shape.
# Usage: band_check.py val1.json val2.json
import json,collections,math,sys
T=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sys.argv[1:]:
    for r in json.load(open(f))['routing']:
        for p in r['programs']:
            T[(r['form'],r['shape'])][p['name']].append(p['time']['median_us'])
res=[]
for (form,sh),v in T.items():
    if form=='fwd': continue
    t,rest=sh.split('x'); h,d=(rest.split(':')+['128'])[:2]; t,h,d=int(t),int(h),int(d)
    det=form.startswith('bwd_det')
    base='sm90.ng_bwd_%s_d%d_%s'%('det' if det else 'nd',d,'ct' if det else 't1024')
    alt='sm90.ng_bwd_%s_d%d_%s'%('det' if det else 'nd',d,'ct_t512p4' if det else 't512p4')
    step=64 if d==128 else 128
    rows=t*h; w=math.ceil(rows/step)/132; f=w-math.floor(w)
    rps=rows/132
    thr=150 if d==128 else 300
    pred=2<=w<5 and 0.15<=f<=0.5
    if base not in v or alt not in v: continue
    r=(sum(v[base])/len(v[base]))/(sum(v[alt])/len(v[alt]))
    res.append((pred,w,f,r,form,sh,rps))
for pred in (True,False):
    sel=[x for x in res if x[0]==pred]
    rs=sorted(x[3] for x in sel)
    print('pred',pred,'n',len(sel),'ratio min %.3f median %.3f max %.3f'%(rs[0],rs[len(rs)//2],rs[-1]), 'wins>1.02:',sum(1 for x in rs if x>1.02),'losses<0.98:',sum(1 for x in rs if x<0.98))
    for x in sorted(sel,key=lambda x:(x[1])):
        print('   %-16s %-12s rows/SM %5.0f waves %5.2f frac %.2f ratio %.3f'%(x[4],x[5],x[6],x[1],x[2],x[3]))
