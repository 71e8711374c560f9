import json,sys,collections
rows=[json.loads(l) for l in open(sys.argv[1])]
agg=collections.OrderedDict()
for r in rows:
    k=r['kernel']; a=agg.setdefault(k,dict(n=0,ctas=0,wi=0,sect=0,dist=0,shw=0,mma=0,bar=0,regs=r['registers_per_thread'],sh=r['shared_bytes_per_cta'],thr=r['threads_per_cta']))
    a['n']+=1;a['ctas']+=r['ctas'];a['wi']+=r['warp_instructions'];a['sect']+=r['global_sectors'];a['dist']+=r['distinct_global_sectors'];a['shw']+=r['shared_wavefronts'];a['mma']+=sum(r['mma'].values());a['bar']+=r['barriers']
print(f"{'kernel':28s} {'n':>3s} {'ctas':>5s} {'thr':>4s} {'regs':>4s} {'shB':>6s} {'Mwarpi':>8s} {'MB req':>8s} {'MB dist':>8s} {'kShWf':>8s} {'kmma':>7s} {'kbar':>6s}")
T=collections.Counter()
for k,a in agg.items():
    print(f"{k:28s} {a['n']:3d} {a['ctas']:5d} {a['thr']:4d} {a['regs']:4d} {a['sh']:6d} {a['wi']/1e6:8.3f} {a['sect']*32/1e6:8.2f} {a['dist']*32/1e6:8.2f} {a['shw']/1e3:8.1f} {a['mma']/1e3:7.1f} {a['bar']/1e3:6.1f}")
    for f in ['wi','sect','dist','shw','mma','bar']: T[f]+=a[f]
print(f"{'TOTAL':28s} {'':3s} {'':5s} {'':4s} {'':4s} {'':6s} {T['wi']/1e6:8.3f} {T['sect']*32/1e6:8.2f} {T['dist']*32/1e6:8.2f} {T['shw']/1e3:8.1f} {T['mma']/1e3:7.1f} {T['bar']/1e3:6.1f}")
