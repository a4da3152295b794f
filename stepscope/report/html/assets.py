"""The page's inline style and script (hand-written, no framework, no fonts to fetch)."""

from __future__ import annotations

CSS = """
:root{--bg:#f4f5f7;--card:#fff;--ink:#1d2330;--muted:#5f6b7a;--line:#e3e6eb;--accent:#3b5bdb;
--high:#d6336c;--medium:#f08c00;--low:#2f9e44;--head:#161b26;--row:#f8f9fb}
@media (prefers-color-scheme:dark){:root{--bg:#11141a;--card:#1a1f29;--ink:#e6e9ef;--muted:#97a1b0;
--line:#2a3140;--head:#0b0e13;--row:#1f2530}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",
Roboto,"Helvetica Neue",Arial,sans-serif}
header{background:var(--head);color:#fff;padding:14px 28px 12px}
header .brand{font-weight:700;letter-spacing:.02em;font-size:13px;color:#9fb3ff;text-transform:uppercase}
header h1{margin:2px 0 2px;font-size:21px;font-weight:600}
header .meta{color:#aab3c2;font-size:12.5px;word-break:break-all}
nav{position:sticky;top:0;z-index:5;background:var(--card);border-bottom:1px solid var(--line);
padding:0 28px;display:flex;gap:2px;flex-wrap:wrap}
nav a{color:var(--muted);text-decoration:none;padding:9px 10px;font-size:13px;border-bottom:2px solid transparent}
nav a:hover{color:var(--ink);border-bottom-color:var(--accent)}
main{max-width:1280px;margin:0 auto;padding:18px 24px 60px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:16px 20px 18px;
margin:0 0 16px;box-shadow:0 1px 2px rgba(16,24,40,.04)}
h2{font-size:16px;margin:0 0 2px}h3{font-size:13.5px;margin:16px 0 6px;color:var(--muted);font-weight:600}
.sub{margin:0 0 10px;color:var(--muted);font-size:12.5px}
.note{color:var(--muted);font-size:12.5px;margin:6px 0}
.empty{color:var(--muted);font-style:italic}.empty.ok{color:var(--low);font-style:normal}
.verdict{font-size:17px;font-weight:600;padding:12px 14px;border-radius:8px;margin:8px 0 12px;
background:linear-gradient(90deg,rgba(59,91,219,.12),rgba(59,91,219,.02));border-left:4px solid var(--accent)}
.verdict .next{font-size:13.5px;font-weight:500;color:var(--muted);margin-top:4px}
ol.findings{list-style:none;padding:0;margin:0}
.finding{border:1px solid var(--line);border-left:4px solid var(--low);border-radius:8px;padding:10px 14px;
margin:0 0 10px}
.finding.sev-high{border-left-color:var(--high)}.finding.sev-medium{border-left-color:var(--medium)}
.fhead{display:flex;align-items:center;gap:10px;flex-wrap:wrap}
.ftitle{font-weight:600;font-size:15px}.rule{color:var(--muted);font-size:12px}
.gain{margin-left:auto;font-weight:600;font-variant-numeric:tabular-nums}
.badge{font-size:11px;font-weight:700;text-transform:uppercase;color:#fff;border-radius:4px;padding:2px 7px;
background:var(--low)}.badge.high{background:var(--high)}.badge.medium{background:var(--medium)}
.advice{margin:8px 0 4px;white-space:pre-wrap}
details.evidence summary{cursor:pointer;color:var(--muted);font-size:12.5px}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:6px 0 0;font-size:12.5px}
dt{color:var(--muted)}dd{margin:0;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
word-break:break-all}
.stats{display:grid;grid-template-columns:repeat(auto-fill,minmax(128px,1fr));gap:10px;margin:8px 0}
.stat{border:1px solid var(--line);border-radius:8px;padding:10px 12px;background:var(--row)}
.stat .v{font-size:20px;font-weight:650;font-variant-numeric:tabular-nums}
.stat .k{color:var(--muted);font-size:12px}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;margin:6px 0;font-size:12.5px;color:var(--muted)}
.legend i,.sw{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
svg.chart{width:100%;height:auto;display:block;margin:4px 0}
svg .grid{stroke:var(--line);stroke-width:1}
svg text{fill:var(--muted);font-size:11px}svg text.name{fill:var(--ink);font-size:11.5px}
svg text.inbar{fill:#10141c;font-size:12px;font-weight:600}
svg .seg:hover,svg .ev:hover{stroke:var(--ink);stroke-width:1}
svg .line{stroke-width:1.6}
svg .lane{fill:var(--row)}
svg .band-dataloader{fill:#eeca3b;opacity:.16}svg .band-sync{fill:#d62728;opacity:.3}
.tablewrap{overflow:auto;margin-top:8px;max-height:460px;border:1px solid var(--line);border-radius:6px}
table.data{border-collapse:collapse;width:100%;font-size:12.5px;font-variant-numeric:tabular-nums}
table.data th{text-align:left;color:var(--muted);font-weight:600;border-bottom:2px solid var(--line);
padding:6px 8px;white-space:nowrap;position:sticky;top:0;background:var(--card)}
table.sortable th{cursor:pointer}table.sortable th:hover{color:var(--ink)}
table.data td{border-bottom:1px solid var(--line);padding:4px 8px}
table.data tr:hover td{background:var(--row)}
td.num,th.num{text-align:right;white-space:nowrap}
td.txt{max-width:520px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;
font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}
td.share{min-width:130px;position:relative}
td.share .bar{position:absolute;left:8px;top:6px;bottom:6px;max-width:calc(100% - 16px);
background:rgba(76,120,168,.28);border-radius:2px}
td.share .pct{position:relative;padding-left:4px}
.pos{color:var(--high)}.neg{color:var(--low)}svg text.pos{fill:var(--high)}svg text.neg{fill:var(--low)}
.gate{display:inline-block;font-weight:700;padding:4px 10px;border-radius:6px;color:#fff;margin-left:8px}
.gate.pass{background:var(--low)}.gate.fail{background:var(--high)}
.tabs{display:flex;gap:6px;flex-wrap:wrap;margin:0 0 12px}
.tabs button{border:1px solid var(--line);background:var(--card);color:var(--ink);border-radius:6px;
padding:4px 10px;cursor:pointer;font:inherit}.tabs button.on{background:var(--accent);color:#fff}
#tip{position:fixed;pointer-events:none;z-index:10;background:#10141c;color:#fff;font-size:12px;
padding:6px 9px;border-radius:6px;max-width:560px;display:none;word-break:break-all;
box-shadow:0 4px 14px rgba(0,0,0,.25)}
.split{display:grid;grid-template-columns:minmax(260px,360px) 1fr;gap:24px;align-items:start}
@media (max-width:900px){.split{grid-template-columns:1fr}}
.hero{border-top:4px solid var(--accent)}.hero .verdict{margin-top:0}
.hero .stats{grid-template-columns:repeat(auto-fill,minmax(150px,1fr))}
footer{color:var(--muted);font-size:12px;text-align:center;padding:8px 0 30px}
td.wrap{white-space:normal;min-width:260px;color:var(--muted)}
a.whatif-link{color:var(--accent);text-decoration:none;font-weight:600;white-space:nowrap}
a.whatif-link:hover{text-decoration:underline}
tr.remedy{scroll-margin-top:96px}tr.remedy:target td{background:rgba(59,91,219,.14)}
"""

JS = """
(function(){
var tip=document.getElementById('tip');
document.addEventListener('mousemove',function(e){
  var t=e.target&&e.target.closest?e.target.closest('[data-tip]'):null;
  if(!t){tip.style.display='none';return;}
  tip.textContent=t.getAttribute('data-tip');tip.style.display='block';
  var x=e.clientX+14,y=e.clientY+14,w=tip.offsetWidth,h=tip.offsetHeight;
  if(x+w>innerWidth-8)x=e.clientX-w-14; if(y+h>innerHeight-8)y=e.clientY-h-14;
  tip.style.left=x+'px';tip.style.top=y+'px';
});
document.querySelectorAll('table.sortable th').forEach(function(th,ci){
  th.addEventListener('click',function(){
    var table=th.closest('table'),body=table.tBodies[0],idx=Array.prototype.indexOf.call(th.parentNode.children,th);
    var asc=th.getAttribute('data-dir')==='desc';th.setAttribute('data-dir',asc?'asc':'desc');
    var rows=Array.prototype.slice.call(body.rows);
    rows.sort(function(a,b){
      var ca=a.cells[idx],cb=b.cells[idx],va=ca.getAttribute('data-sort'),vb=cb.getAttribute('data-sort');
      var r=(va!==null&&vb!==null)?(parseFloat(va||'0')-parseFloat(vb||'0'))
        :ca.textContent.localeCompare(cb.textContent);
      return asc?r:-r;});
    rows.forEach(function(r){body.appendChild(r);});
  });
});
var tabs=document.querySelectorAll('.tabs button');
tabs.forEach(function(b){b.addEventListener('click',function(){
  tabs.forEach(function(o){o.classList.toggle('on',o===b);});
  document.querySelectorAll('.rank-page').forEach(function(p){
    p.style.display=(p.getAttribute('data-rank')===b.getAttribute('data-rank'))?'':'none';});
});});
if(tabs.length){tabs[0].click();}
document.querySelectorAll('a[data-goto-rank]').forEach(function(a){a.addEventListener('click',function(){
  tabs.forEach(function(b){if(b.getAttribute('data-rank')===a.getAttribute('data-goto-rank'))b.click();});
});});
})();
"""
