//! A standalone HTML page: the waterfall SVG inline and the numbers as tables.

use std::fmt::Write;

use crate::analysis::Stats;
use crate::report::{lane_rows, summary_rows, LANE_HEADER};
use crate::svg::{escape, render, SvgOptions};
use crate::waterfall::Waterfall;

const STYLE: &str = "body{font-family:sans-serif;margin:16px;color:#222}\
table{border-collapse:collapse;margin:12px 0}\
td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}\
td:first-child,th:first-child{text-align:left}\
.defs{color:#555;font-size:90%;max-width:70em}";

/// The whole page.
pub fn page(w: &Waterfall, stats: &Stats, opts: &SvgOptions) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{}</title><style>{STYLE}</style></head><body>\n<h1>{}</h1>\n",
        escape(&opts.title),
        escape(&opts.title)
    );
    h.push_str(&render(w, opts));
    h.push_str("<h2>Lanes</h2>\n<table><tr>");
    for head in LANE_HEADER {
        let _ = write!(h, "<th>{head}</th>");
    }
    h.push_str("</tr>\n");
    for row in lane_rows(stats) {
        h.push_str("<tr>");
        for cell in row {
            let _ = write!(h, "<td>{}</td>", escape(&cell));
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n<h2>Run</h2>\n<table>\n");
    for (k, v) in summary_rows(stats) {
        let _ = writeln!(h, "<tr><td>{}</td><td>{}</td></tr>", escape(&k), escape(&v));
    }
    h.push_str("</table>\n<p class=\"defs\">");
    h.push_str(&escape(crate::DEFINITIONS));
    h.push_str("</p>\n</body></html>\n");
    h
}
