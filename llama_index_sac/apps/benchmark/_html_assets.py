"""The inline CSS and JS of the HTML report (:mod:`llama_index_sac.apps.benchmark.html_report`)."""

#: The page's style sheet (inline in the page: no network).
CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:#1d2330;margin:0;background:#f6f7f9}
main{max-width:1500px;margin:0 auto;padding:0 24px 48px}header{background:#1f3a5f;color:#fff;padding:18px 24px}
header h1{margin:0 0 4px;font-size:22px}header p{margin:2px 0;opacity:.9}header code{color:#dfe8f5}
nav a{color:#cfe0ff;margin-right:16px}h2{border-bottom:2px solid #1f3a5f;padding-bottom:4px;margin-top:32px}
h3{margin:16px 0 6px;font-size:15px}.blocks{display:flex;flex-wrap:wrap;gap:0 28px}
table{border-collapse:collapse;background:#fff;margin-bottom:8px}
th,td{border:1px solid #d5d9e0;padding:3px 9px}thead th{background:#e8ecf2}
tr:has(th[rowspan])>*{border-top:2px solid #9aa5b5}td.num{text-align:right;
font-variant-numeric:tabular-nums}td.best{font-weight:700;background:#eaf6ec}.note{color:#555;font-size:13px}
figure{margin:10px 0;background:#fff;border:1px solid #d5d9e0;padding:6px;display:inline-block;max-width:100%}
figure img{max-width:100%;height:auto}.query{background:#fff;border:1px solid #d5d9e0;border-radius:6px;
margin:8px 0;padding:6px 12px}.query summary{cursor:pointer;line-height:1.8}.qtext{font-weight:600}
.dataset{background:#e8ecf2;border-radius:4px;padding:0 6px;font-size:12px}.tally{margin-right:14px;font-size:13px}
.pair{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:16px}.col h4,.gold h4{margin:8px 0 2px}
.col ol{padding-left:0;list-style:none;margin:4px 0}.chunk{border-left:5px solid #999;background:#fafbfc;
margin:6px 0;padding:4px 8px}.chunk.hit{border-color:#2e7d32}.chunk.right-doc{border-color:#d89b00}
.chunk.wrong-doc{border-color:#c62828}.badge{display:inline-block;border-radius:3px;padding:0 5px;font-size:11px;
font-weight:700;color:#fff;background:#777}.badge.hit{background:#2e7d32}.badge.right-doc{background:#b07d00}
.badge.wrong-doc{background:#c62828}.summary{margin:3px 0;font-size:13px;color:#33415c}.scores{margin:2px 0;
font-size:13px}.text{white-space:pre-wrap;font:12.5px/1.4 ui-monospace,Menlo,Consolas,monospace;max-height:13em;
overflow:auto;background:#fff;border:1px solid #e3e6eb;padding:4px 6px;margin-top:3px}mark{background:#c8f0c0}
.gold ul{margin:2px 0;padding-left:18px}.missing{color:#a00}#filters{background:#fff;border:1px solid #d5d9e0;
padding:8px 12px;position:sticky;top:0;z-index:2}#filters input{width:280px}code{font-size:12.5px}
"""

#: The drill-down's filter bar (hidden until this runs: the page is complete without JS).
JS = """
document.documentElement.dataset.js = "on";
const bar = document.getElementById("filters");
if (bar) {
  bar.hidden = false;
  const box = document.getElementById("f-text"), sel = document.getElementById("f-kind");
  const count = document.getElementById("f-count"), items = [...document.querySelectorAll("details.query")];
  const apply = () => {
    const needle = box.value.toLowerCase(), kind = sel.value; let shown = 0;
    for (const q of items) {
      const w0 = +(q.dataset.wrongA || 0), w1 = +(q.dataset.wrongB || 0);
      const h0 = +(q.dataset.hitsA || 0), h1 = +(q.dataset.hitsB || 0);
      const ok = (!needle || q.textContent.toLowerCase().includes(needle)) && (kind === "all" ||
        (kind === "w0" && w0 > 0 && w1 === 0) || (kind === "w1" && w1 > 0 && w0 === 0) ||
        (kind === "nohit" && h0 === 0 && h1 === 0));
      q.style.display = ok ? "" : "none"; shown += ok;
    }
    count.textContent = shown + " of " + items.length + " queries shown";
  };
  box.addEventListener("input", apply); sel.addEventListener("change", apply);
  document.getElementById("f-open").onclick = () => items.forEach(q => { q.open = true; });
  document.getElementById("f-close").onclick = () => items.forEach(q => { q.open = false; });
  apply();
}
"""
