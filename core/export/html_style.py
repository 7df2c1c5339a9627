"""Inline stylesheet of report.html: system font stacks only (no web fonts), light page, print friendly."""

CSS = """
:root { --fg:#202124; --muted:#5f6368; --line:#dadce0; --bg:#ffffff; --band:#f5f7fb;
        --error:#c5221f; --warning:#b06000; --info:#1967d2; }
* { box-sizing: border-box; }
body { margin:0; background:var(--bg); color:var(--fg);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; }
main { max-width: 1240px; margin: 0 auto; padding: 24px 28px 48px; }
.fmeta, .fix, .fhead, table.meta td { overflow-wrap: anywhere; }
.scroll { overflow-x: auto; }
h1 { font-size: 24px; margin: 0 0 2px; word-break: break-all; }
h3 { font-size: 15px; margin: 18px 0 6px; }
h2 { font-size: 18px; margin: 28px 0 10px; padding-bottom: 4px; border-bottom: 1px solid var(--line); }
code { font: 12.5px ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; }
.muted { color: var(--muted); }
.cards { display:flex; flex-wrap:wrap; gap:12px; margin:16px 0 4px; }
.card { border:1px solid var(--line); border-radius:8px; padding:10px 16px; min-width:130px; background:var(--band); }
.cv { font-size:20px; font-weight:600; } .ck { color:var(--muted); font-size:12px; text-transform:uppercase; }
table { border-collapse: collapse; width: 100%; margin: 8px 0; font-size: 13px; }
th, td { text-align:left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
th { background: var(--band); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num { white-space: nowrap; }
table.meta td:first-child { width: 170px; color: var(--muted); white-space: nowrap; }
table.top td:first-child { max-width: 720px; }
.name { display:block; overflow:hidden; text-overflow:ellipsis; white-space:nowrap; max-width:720px;
        font: 12.5px ui-monospace, Menlo, Consolas, monospace; }
figure { margin: 8px 0 16px; } figure img { max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 12.5px; margin-top: 4px; }
.finding { border:1px solid var(--line); border-left: 5px solid var(--info); border-radius: 6px;
           padding: 10px 14px; margin: 10px 0; }
.finding.error { border-left-color: var(--error); } .finding.warning { border-left-color: var(--warning); }
.fhead { font-size: 15px; } .fmeta { color: var(--muted); font-size: 13px; margin: 4px 0; }
.rule { color: var(--muted); margin-left: 6px; }
.badge { display:inline-block; font-size:11px; font-weight:700; text-transform:uppercase; color:#fff;
         border-radius:4px; padding:1px 6px; background: var(--info); }
.badge.error { background: var(--error); } .badge.warning { background: var(--warning); }
.badge.oneoff { background: #5f6368; text-transform: none; }
.facts { font-size: 13px; margin: 6px 0; }
.evidence { margin: 6px 0; padding-left: 20px; font-size: 13px; }
.evidence li { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; max-width: 1140px; }
.fix { background: #e6f4ea; border-radius: 4px; padding: 6px 10px; font-size: 13px; }
.warnings { color: var(--warning); }
footer { margin-top: 32px; color: var(--muted); font-size: 13px; }
@media print { main { max-width: none; } section { break-inside: avoid-page; } }
"""
