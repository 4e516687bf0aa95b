import glob,statistics as st,sys,collections
for f in sorted(glob.glob(sys.argv[1])):
    L=collections.defaultdict(list)
    for l in open(f):
        if l.startswith('TL '):
            r=l.split(); L[int(r[2])].append([int(x) for x in r[4:9]])
    print(f.split('/')[-1])
    for k,rows in sorted(L.items()):
        t1=[r[1] for r in rows]; t2=[r[2] for r in rows]; t3=[r[3] for r in rows]; n=[r[4] for r in rows]
        ps=st.median([(r[1]-r[0])/r[4] for r in rows])/1000
        print('  L%d n=%d walkend min %.2f med %.2f max %.2f | t2 med %.2f max %.2f | exit max %.2f | step med %.3f steps %d-%d'%(
            k,len(rows),min(t1)/1e3,st.median(t1)/1e3,max(t1)/1e3,st.median(t2)/1e3,max(t2)/1e3,max(t3)/1e3,ps,min(n),max(n)))
