//! `cargo xtask site`: a static site from one evidence set (one or more systems):
//! an index of systems and submissions, one page per (system, submission) with the
//! seed pages' breadcrumb and sections, links to the same submission on the other
//! systems, SVG charts beside the tables they are drawn from, and the Markdown pages.
//! No scripts, no network assets; the same evidence gives the same bytes.
//!
//! Charts are SVG written here rather than with a plotting crate: two chart kinds
//! (grouped bars on a log scale, a dot strip) need about a hundred lines, every
//! coordinate is printed with a fixed precision so the bytes are reproducible, and no
//! font files or text-measuring code enter the build.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use xshell::Shell;

use crate::build::submission::Submission;
use crate::evidence::schema::Record;
use crate::evidence::Layout;
use crate::flags::Site;
use crate::{measure::stats, pages::report, project};

const COLORS: [&str; 3] = ["#4477aa", "#ee6677", "#228833"];
const STYLE: &str = "body{font-family:sans-serif;max-width:60em;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left}\
nav{font-size:.9em;margin-bottom:1em}figure{margin:1.5em 0}figcaption{font-size:.9em;color:#444}\
code{background:#f3f3f3;padding:0 .2em}";

impl Site {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        crate::evidence::refuse_unsafe(&self.dir)?;
        let systems = systems(&self.dir)?;
        if systems.is_empty() {
            bail!("no evidence under {}: run a campaign (or verify/bench) first", self.dir);
        }
        let mut pages = Vec::new();
        for (system, ids) in &systems {
            for id in ids {
                let sub = match Submission::load(id) {
                    Ok(s) => s,
                    Err(e) => {
                        crate::note!("skipping {system}/{id}: {e:#}");
                        continue;
                    }
                };
                let layout = Layout::new(&self.dir, system);
                let markdown = report::render(&layout, &sub)?;
                let html = page(&systems, system, &sub, &markdown, &charts(&layout, &sub)?);
                write(&self.out.join(system).join(format!("{id}.md")), &markdown)?;
                write(&self.out.join(system).join(format!("{id}.html")), &html)?;
                pages.push((system.clone(), id.clone()));
            }
        }
        write(&self.out.join("index.html"), &index(&systems))?;
        crate::say!("site: {} pages in {}/index.html", pages.len(), self.out);
        Ok(())
    }
}

fn write(path: &Utf8Path, text: &str) -> Result<()> {
    std::fs::create_dir_all(path.parent().context("no parent")?).with_context(|| format!("cannot create {path}"))?;
    project::write_atomic(path, text.as_bytes())
}

/// System → submission ids with evidence, both sorted.
fn systems(root: &Utf8Path) -> Result<BTreeMap<String, Vec<String>>> {
    let mut out = BTreeMap::new();
    let list = |dir: Utf8PathBuf| -> Vec<String> {
        dir.read_dir_utf8()
            .map(|d| {
                let dirs = d.filter_map(Result::ok).filter(|e| e.file_type().is_ok_and(|t| t.is_dir()));
                dirs.map(|e| e.file_name().to_owned()).collect()
            })
            .unwrap_or_default()
    };
    for system in list(root.to_owned()) {
        let dir = root.join(&system);
        let mut ids: Vec<String> = ["kat", "records", "profile"].iter().flat_map(|k| list(dir.join(k))).collect();
        ids.sort();
        ids.dedup();
        if !ids.is_empty() {
            out.insert(system, ids);
        }
    }
    Ok(out)
}

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

pub(crate) fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(title)
    )
}

fn index(systems: &BTreeMap<String, Vec<String>>) -> String {
    let mut h = head("Performance measurements");
    h.push_str("<h1>Performance measurements</h1>\n<table>\n<tr><th>submission</th>");
    for s in systems.keys() {
        let _ = write!(h, "<th>{}</th>", esc(s));
    }
    h.push_str("</tr>\n");
    let mut ids: Vec<&String> = systems.values().flatten().collect();
    ids.sort();
    ids.dedup();
    for id in ids {
        let _ = write!(h, "<tr><td>{}</td>", esc(id));
        for (s, have) in systems {
            if have.contains(id) {
                let _ = write!(h, "<td><a href=\"{0}/{1}.html\">{0}</a></td>", esc(s), esc(id));
            } else {
                h.push_str("<td>-</td>");
            }
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n</body>\n</html>\n");
    h
}

/// One page: breadcrumb with the other systems, the report as HTML, the charts after
/// the performance table they are drawn from.
fn page(systems: &BTreeMap<String, Vec<String>>, system: &str, sub: &Submission, md: &str, charts: &str) -> String {
    let mut h = head(&format!("{} on {system}", sub.id));
    let _ = write!(
        h,
        "<nav><a href=\"../index.html\">Performance measurements</a> › {} › {} · system:",
        esc(system),
        esc(&sub.id)
    );
    for (s, ids) in systems.iter().filter(|(_, ids)| ids.contains(&sub.id)) {
        if s == system {
            let _ = write!(h, " <strong>{}</strong>", esc(s));
        } else {
            let _ = write!(h, " <a href=\"../{0}/{1}.html\">{0}</a>", esc(s), esc(&sub.id));
        }
        let _ = ids;
    }
    h.push_str("</nav>\n");
    h.push_str(&markdown_to_html(md, charts));
    h.push_str("</body>\n</html>\n");
    h
}

/// The Markdown subset `report` writes: headings, tables, lists, paragraphs, code
/// spans. `insert` goes before section 5.
pub(crate) fn markdown_to_html(md: &str, insert: &str) -> String {
    let mut h = String::new();
    let mut table = false;
    let mut list = false;
    let close = |h: &mut String, table: &mut bool, list: &mut bool| {
        if std::mem::take(table) {
            h.push_str("</table>\n");
        }
        if std::mem::take(list) {
            h.push_str("</ul>\n");
        }
    };
    for line in md.lines() {
        if line.starts_with("|---") {
            continue;
        }
        if let Some(row) = line.strip_prefix('|') {
            let cell = if table { "td" } else { "th" };
            if !table {
                close(&mut h, &mut table, &mut list);
                h.push_str("<table>\n");
                table = true;
            }
            let cells: Vec<String> =
                cells(row).iter().map(|c| format!("<{cell}>{}</{cell}>", inline(c.trim()))).collect();
            let _ = writeln!(h, "<tr>{}</tr>", cells.concat());
            continue;
        }
        if let Some(item) = line.strip_prefix("- ") {
            if !list {
                close(&mut h, &mut table, &mut list);
                h.push_str("<ul>\n");
                list = true;
            }
            let _ = writeln!(h, "<li>{}</li>", inline(item));
            continue;
        }
        close(&mut h, &mut table, &mut list);
        if line.starts_with("## 5.") {
            h.push_str(insert);
        }
        if let Some(t) = line.strip_prefix("## ") {
            let _ = writeln!(h, "<h2>{}</h2>", inline(t));
        } else if let Some(t) = line.strip_prefix("# ") {
            let _ = writeln!(h, "<h1>{}</h1>", inline(t));
        } else if !line.trim().is_empty() {
            let _ = writeln!(h, "<p>{}</p>", inline(line));
        }
    }
    close(&mut h, &mut table, &mut list);
    h
}

/// The cells of a table row (after its first `|`): split at every `|` that no
/// backslash escapes (`report::md`).
fn cells(row: &str) -> Vec<&str> {
    let mut cells = Vec::new();
    let (mut start, mut escaped) = (0, false);
    for (i, c) in row.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '|' => {
                cells.push(&row[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if !row[start..].trim().is_empty() {
        cells.push(&row[start..]);
    }
    cells
}

/// Escape, turn `code` spans into <code>, and show a backslash-escaped character
/// as itself.
fn inline(s: &str) -> String {
    let mut h = String::with_capacity(s.len());
    let (mut code, mut chars) = (false, s.chars());
    let put = |h: &mut String, c: char| h.push_str(&esc(c.encode_utf8(&mut [0; 4])));
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(n) if n.is_ascii_punctuation() => put(&mut h, n),
                Some(n) => {
                    h.push('\\');
                    put(&mut h, n);
                }
                None => h.push('\\'),
            },
            '`' => {
                h.push_str(if code { "</code>" } else { "<code>" });
                code = !code;
            }
            c => put(&mut h, c),
        }
    }
    if code {
        h.push_str("</code>");
    }
    h
}

/// The charts of one page, from the timing records (none for emulated runs).
fn charts(layout: &Layout, sub: &Submission) -> Result<String> {
    // Figures the host's CPU check refuted are no bars (the table marks them).
    let credible = |r: &Record| r.host_check.credibility != crate::evidence::schema::Credibility::NotCredible;
    let records: Vec<Record> = report::records(layout, sub)?.into_iter().filter(credible).collect();
    if records.is_empty() || records.iter().any(|r| r.emulated) {
        return Ok(String::new());
    }
    let mut h = String::new();
    let _ = write!(
        h,
        "<figure>\n{}<figcaption>Figure 1. Mean time per operation across parameter sets (log scale), from the \
         table of section 4.</figcaption>\n</figure>\n",
        times_chart(&records)
    );
    let _ = write!(
        h,
        "<figure>\n{}<figcaption>Figure 2. Each trial's time per operation relative to the median trial of its \
         (instance, operation); replaced trials hollow. From the table below.</figcaption>\n</figure>\n",
        spread_chart(&records)
    );
    h.push_str("<table>\n<tr><th>instance</th><th>operation</th><th>trial / median trial</th></tr>\n");
    for r in &records {
        let median = r.aggregate.median_trial_ns.max(1e-9);
        let v: Vec<String> = r.trials.iter().map(|t| format!("{:.3}", t.trial.ns_per_op() / median)).collect();
        let _ = writeln!(h, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(&r.label), r.op.name(), v.join(", "));
    }
    h.push_str("</table>\n");
    Ok(h)
}

/// Grouped bars: one group per instance, one bar per operation, log10 of the mean ns.
pub fn times_chart(records: &[Record]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    for r in records {
        if !labels.contains(&r.label.as_str()) {
            labels.push(&r.label);
        }
    }
    // The operations in the records' own (page) order: the family's.
    let mut ops: Vec<&str> = Vec::new();
    for r in records {
        if !ops.contains(&r.op.name()) {
            ops.push(r.op.name());
        }
    }
    let groups: Vec<(String, Vec<Option<f64>>)> = labels
        .iter()
        .map(|l| {
            let mean = |op: &&str| records.iter().find(|r| r.label == *l && r.op.name() == *op);
            ((*l).to_owned(), ops.iter().map(|op| mean(op).map(|r| r.aggregate.mean_ns)).collect())
        })
        .collect();
    bars(&groups, &ops)
}

/// Grouped bars of times in ns on a log scale: one group per label, one bar per series.
pub fn bars(groups: &[(String, Vec<Option<f64>>)], series: &[&str]) -> String {
    let logs: Vec<f64> = groups.iter().flat_map(|g| g.1.iter().flatten()).map(|ns| ns.max(1.0).log10()).collect();
    let lo = logs.iter().copied().fold(f64::INFINITY, f64::min).floor();
    let hi = logs.iter().copied().fold(f64::NEG_INFINITY, f64::max).ceil().max(lo + 1.0);
    let (w, ht, left, bottom, top) = (640.0, 320.0, 70.0, 40.0, 20.0);
    let y = |l: f64| top + (ht - bottom - top) * (1.0 - (l - lo) / (hi - lo));
    let group_w = (w - left - 10.0) / groups.len().max(1) as f64;
    let bar_w = group_w / (series.len() as f64 + 1.0);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{ht}\" viewBox=\"0 0 {w} {ht}\" role=\"img\">\n");
    let mut decade = lo;
    while decade <= hi {
        let _ = writeln!(
            s,
            "<line x1=\"{left}\" x2=\"{0}\" y1=\"{1:.1}\" y2=\"{1:.1}\" stroke=\"#ddd\"/><text x=\"{2}\" y=\"{3:.1}\" font-size=\"11\" text-anchor=\"end\">{4}</text>",
            w - 10.0,
            y(decade),
            left - 4.0,
            y(decade) + 4.0,
            esc(&stats::human_time(10f64.powf(decade)))
        );
        decade += 1.0;
    }
    for (g, (label, values)) in groups.iter().enumerate() {
        let x0 = left + g as f64 * group_w;
        for (k, ns) in values.iter().enumerate() {
            let Some(ns) = ns else { continue };
            let top_y = y(ns.max(1.0).log10());
            let _ = writeln!(
                s,
                "<rect x=\"{:.1}\" y=\"{top_y:.1}\" width=\"{bar_w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{} {}: {}</title></rect>",
                x0 + bar_w * (0.5 + k as f64),
                (ht - bottom - top_y).max(1.0),
                COLORS[k % COLORS.len()],
                esc(label),
                esc(series[k]),
                esc(&stats::human_time(*ns))
            );
        }
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{}</text>",
            x0 + group_w / 2.0,
            ht - bottom + 16.0,
            esc(label)
        );
    }
    legend(&mut s, series, (left, ht - 8.0));
    s.push_str("</svg>\n");
    s
}

fn legend(s: &mut String, series: &[&str], (x, y): (f64, f64)) {
    for (k, name) in series.iter().enumerate() {
        let x = x + 90.0 * k as f64;
        let _ = writeln!(
            s,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\" font-size=\"11\">{}</text>",
            y - 9.0,
            COLORS[k % COLORS.len()],
            x + 14.0,
            esc(name)
        );
    }
}

/// One row per (instance, operation): every trial's ns per operation over the median.
pub fn spread_chart(records: &[Record]) -> String {
    let rows: Vec<(String, Vec<(f64, bool)>)> = records
        .iter()
        .map(|r| {
            let median = r.aggregate.median_trial_ns.max(1e-9);
            let dots = r.trials.iter().map(|t| (t.trial.ns_per_op() / median, t.trial.replaced)).collect();
            (format!("{} {}", r.label, r.op.name()), dots)
        })
        .collect();
    let spread = rows.iter().flat_map(|(_, d)| d.iter().map(|(v, _)| (v - 1.0).abs())).fold(0.02, f64::max);
    let (lo, hi) = (1.0 - spread * 1.1, 1.0 + spread * 1.1);
    let (w, left, row_h, top) = (640.0, 150.0, 18.0, 10.0);
    let ht = top + row_h * rows.len() as f64 + 30.0;
    let x = |v: f64| left + (w - left - 20.0) * (v - lo) / (hi - lo);
    let mut s = format!("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{ht}\" viewBox=\"0 0 {w} {ht}\" role=\"img\">\n");
    let _ =
        writeln!(s, "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{top}\" y2=\"{1}\" stroke=\"#999\"/>", x(1.0), ht - 30.0);
    for (i, (label, dots)) in rows.iter().enumerate() {
        let cy = top + row_h * (i as f64 + 0.5);
        let _ = writeln!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" font-size=\"11\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            cy + 4.0,
            esc(label)
        );
        for (v, replaced) in dots {
            let fill = if *replaced { "none" } else { "#4477aa" };
            let _ =
                writeln!(s, "<circle cx=\"{:.1}\" cy=\"{cy:.1}\" r=\"4\" fill=\"{fill}\" stroke=\"#4477aa\"/>", x(*v));
        }
    }
    for v in [lo, 1.0, hi] {
        let _ = writeln!(
            s,
            "<text x=\"{:.1}\" y=\"{}\" font-size=\"11\" text-anchor=\"middle\">{:.3}</text>",
            x(v),
            ht - 12.0,
            v
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_text_cannot_become_markup() {
        // Labels, messages and paths on a page come from manifests and sandboxes.
        let md =
            "# x <b>\n\n| a | b |\n|---|---|\n| <script>alert(1)</script> | `\"><img src=x onerror=1>` |\n- <iframe>\n";
        let html = markdown_to_html(md, "");
        assert!(
            !html.contains("<script") && !html.contains("<img") && !html.contains("<iframe") && !html.contains("<b>")
        );
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && html.contains("<code>&quot;&gt;&lt;img"));
        assert!(html.contains("<th>a</th>") && html.contains("<li>&lt;iframe&gt;</li>"));
    }
}
