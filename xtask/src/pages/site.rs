//! `cargo xtask site`: a static site from one evidence set (one or more systems):
//! an index in the manner of eBACS's tables (per system and submission: KAT verdicts,
//! median time and cycles per operation of each instance, sizes, date, harness commit,
//! toolchain), one page per (system, submission) with the seed pages' breadcrumb and
//! sections, links to the same submission on the other systems, charts
//! (`pages/chart.rs`) beside the tables they are drawn from, the Markdown pages, and a
//! copy of every raw evidence file (`raw/`, with the evidence index) that the pages
//! link to. Quick, unfixed-host and emulated runs carry a banner on both.
//! No scripts, no network assets; the same evidence gives the same bytes.

use crate::pages::esc;
use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use xshell::Shell;

use crate::compile::submission::Submission;
use crate::evidence::schema::{Credibility, Record};
use crate::evidence::{self, Layout};
use crate::pages::chart::{self, Chart, Point, Row, Scale};
use crate::pages::report::{self, Evidence};
use crate::{measure::stats, project};

/// `site`: the static HTML site of an evidence set.
#[derive(Debug, Clone)]
pub struct Site {
    pub dir: camino::Utf8PathBuf,
    pub out: camino::Utf8PathBuf,
    pub manifests: Vec<String>,
}

/// Where the copies of the raw evidence go, below the site.
const RAW: &str = "raw";
const STYLE: &str = "body{font-family:sans-serif;max-width:80em;margin:2em auto;padding:0 1em;color:#222}\
table{border-collapse:collapse;margin:1em 0;display:block;overflow-x:auto;max-width:100%}td,th{border:1px solid #bbb;padding:.2em .5em;text-align:left;vertical-align:top}\
td.n,td:first-child{white-space:nowrap}td.n{text-align:right}th small,td small{color:#555;font-weight:normal}\
nav{font-size:.9em;margin-bottom:1em}figure{margin:1.5em 0}figcaption{font-size:.9em;color:#444}\
.banner{border:2px solid #c60;background:#fff4e5;padding:.4em .7em;margin:.7em 0}.meta{color:#444;font-size:.9em}\
code{background:#f3f3f3;padding:0 .2em}";

impl Site {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        if !self.dir.is_dir() {
            return crate::ui::usage(format!(
                "no evidence directory {}: give the --out of a campaign, verify or bench run",
                self.dir
            ));
        }
        refuse_overlap(&self.dir, &self.out)?;
        evidence::refuse_unindexed(&self.dir)?;
        let files = evidence::files(&self.dir)?;
        let systems = systems(&self.dir)?;
        if systems.is_empty() {
            bail!("no evidence under {}: run a campaign (or verify/bench) first", self.dir);
        }
        let given = self.manifests.iter().map(|m| given_manifest(m)).collect::<Result<Vec<Submission>>>()?;
        let mut shown: Vec<Shown> = Vec::new();
        for (system, ids) in &systems {
            for id in ids {
                let sub = match given.iter().find(|s| s.id == *id).cloned().map_or_else(|| Submission::load(id), Ok) {
                    Ok(s) => s,
                    Err(e) => {
                        crate::note!("skipping {system}/{id}: {e:#} (a manifest elsewhere: --manifest PATH)");
                        continue;
                    }
                };
                let layout = Layout::new(&self.dir, system);
                let markdown = report::render(&layout, &sub)?;
                let e = Evidence::read(&layout, &sub)?;
                let raw = raw_links(&files, &layout, &sub);
                let html = page(&PageOf { systems: &systems, system, sub: &sub, e: &e }, &markdown, &raw);
                write(&self.out.join(system).join(format!("{id}.md")), markdown.as_bytes())?;
                write(&self.out.join(system).join(format!("{id}.html")), html.as_bytes())?;
                let sanitized = crate::sanitize::records(&layout, &sub)?;
                shown.push(Shown { system: system.clone(), sub, e, sanitized });
            }
        }
        copy_raw(&self.dir, &files, &self.out.join(RAW))?;
        write(&self.out.join("index.html"), index(&shown).as_bytes())?;
        let n = shown.len();
        crate::say!("site: {n} {} in {}/index.html", if n == 1 { "page" } else { "pages" }, self.out);
        Ok(())
    }
}

/// A manifest `--manifest` names: a path to a `.toml` file, loaded as `report` loads one.
fn given_manifest(path: &str) -> Result<Submission> {
    if !path.ends_with(".toml") {
        return crate::ui::usage(format!("--manifest {path}: give the path of a manifest (a .toml file)"));
    }
    Submission::load(path)
}

/// One rendered (system, submission), for the index.
struct Shown {
    system: String,
    sub: Submission,
    e: Evidence,
    sanitized: Vec<crate::evidence::schema::SanitizeRecord>,
}

/// What one page is drawn from.
struct PageOf<'a> {
    systems: &'a BTreeMap<String, Vec<String>>,
    system: &'a str,
    sub: &'a Submission,
    e: &'a Evidence,
}

/// The site and the evidence set must not hold each other: a site inside the evidence
/// would be extra files to `evidence check`, evidence inside the site could be
/// overwritten by it. Checked before anything is written.
fn refuse_overlap(dir: &Utf8Path, out: &Utf8Path) -> Result<()> {
    let (d, o) = (project::resolved(dir), project::resolved(out));
    if o.starts_with(&d) {
        return crate::ui::usage(format!(
            "--out {out} is inside the evidence set {dir}: the site would become part of the evidence \
             (and `evidence check` would fail); choose a folder outside it (the default is ./site)"
        ));
    }
    if d.starts_with(&o) {
        return crate::ui::usage(format!(
            "the evidence set {dir} is inside --out {out}: the site would write among the evidence; choose \
             a folder outside it (the default is ./site)"
        ));
    }
    Ok(())
}

fn write(path: &Utf8Path, bytes: &[u8]) -> Result<()> {
    std::fs::create_dir_all(path.parent().context("no parent")?).with_context(|| format!("cannot create {path}"))?;
    project::write_atomic(path, bytes)
}

/// Copy every evidence file the scan found (regular files only, read without following
/// a link) and the evidence index into `raw`, under the same relative paths, so that
/// `sha256sum -c EVIDENCE.sha256` holds there.
fn copy_raw(root: &Utf8Path, files: &[Utf8PathBuf], raw: &Utf8Path) -> Result<()> {
    let index = [Utf8PathBuf::from(evidence::INDEX), Utf8PathBuf::from(evidence::INDEX_DIGEST)];
    for rel in files.iter().chain(index.iter().filter(|f| root.join(f).exists())) {
        let cap = if rel.extension() == Some("json") { project::EVIDENCE_JSON_CAP } else { project::EVIDENCE_FILE_CAP };
        let bytes = project::read_regular(&root.join(rel), cap)?;
        write(&raw.join(rel), &bytes)?;
    }
    Ok(())
}

/// The raw files of one submission on one system: (path under the system's folder, as
/// section 7 shows it; link from its page).
fn raw_links(files: &[Utf8PathBuf], layout: &Layout, sub: &Submission) -> Vec<(String, String)> {
    let dirs =
        [layout.kat_dir(&sub.id), layout.records_dir(&sub.id), layout.profile_dir(&sub.id), layout.ct_dir(&sub.id)];
    let shown =
        |f: &Utf8PathBuf| layout.out.join(f).strip_prefix(&layout.system_dir).map_or(f.to_string(), |p| p.to_string());
    files
        .iter()
        .filter(|f| dirs.iter().any(|d| layout.out.join(f).starts_with(d)))
        .map(|f| (shown(f), format!("../{RAW}/{}", url(f.as_str()))))
        .collect()
}

/// A relative path as a URL path: every byte but unreserved ones and `/` percent-encoded,
/// so no name can end the attribute or become a scheme.
fn url(path: &str) -> String {
    let keep = |b: u8| b.is_ascii_alphanumeric() || b"-._~/".contains(&b);
    path.bytes().map(|b| if keep(b) { (b as char).to_string() } else { format!("%{b:02X}") }).collect()
}

/// System → submission ids with evidence, both sorted. A folder whose name is no plain
/// name, or that the site's own files would collide with, is no system.
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
        if project::plain_name(&system).is_err() || [RAW, "index.html"].contains(&system.as_str()) {
            crate::note!("skipping folder {:?} of {root}: not a system name", system);
            continue;
        }
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

pub(crate) fn head(title: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n",
        esc(title)
    )
}

/// The banners of a set of timing records: runs whose figures are not those of a
/// reference campaign, said where a reader looks first.
fn banners(records: &[Record]) -> String {
    let mut h = String::new();
    let mut put = |what: &str, text: String| {
        let _ = writeln!(h, "<div class=\"banner\"><strong>{what}.</strong> {text}</div>");
    };
    if records.iter().any(|r| r.quick) {
        put("Quick run", "short trials for CI (<code>--quick</code>): the figures are indicative only.".into());
    }
    let mut failed: Vec<String> = records.iter().flat_map(|r| r.host_gate.failed()).map(|c| esc(&c.name)).collect();
    failed.sort();
    failed.dedup();
    if !failed.is_empty() {
        put(
            "Unfixed host",
            format!(
                "timed although the host gate's checks failed ({}): frequency scaling, turbo or other load may \
                 move the figures.",
                failed.join(", ")
            ),
        );
    }
    if records.iter().any(|r| r.emulated) {
        put("Emulated", "timed under qemu-user emulation: no figures are shown, they are not measurements.".into());
    }
    h
}

/// The page a researcher opens first: per system, per submission, one row per instance.
fn index(shown: &[Shown]) -> String {
    let mut h = head("Performance measurements");
    h.push_str(
        "<h1>Performance measurements</h1>\n<p>Independent measurements by ngcc-repro. Per system and \
         submission: the KAT verdict of each instance, the median time per operation over its trials (and \
         cycles where the counter counts them), and sizes in bytes. Each submission's name links to its page; the raw \
         records and logs are in <a href=\"raw/EVIDENCE.sha256\">raw/</a> with their index.</p>\n",
    );
    if shown.iter().flat_map(|s| &s.e.records).any(|r| !stats::indicative(r).is_empty()) {
        let _ = writeln!(h, "<p class=\"meta\">{}</p>", inline(&stats::indicative_rule()));
    }
    let mut systems: Vec<&str> = shown.iter().map(|s| s.system.as_str()).collect();
    systems.dedup();
    for system in systems {
        let here: Vec<&Shown> = shown.iter().filter(|s| s.system == system).collect();
        let _ = writeln!(h, "<h2 id=\"{0}\">{0}</h2>", esc(system));
        if let Some(env) = here.iter().find_map(|s| s.e.env.as_ref().or(s.e.records.first().map(|r| &r.environment))) {
            let _ = writeln!(
                h,
                "<p class=\"meta\">{} · {} · {}</p>",
                esc(&env.processor),
                esc(&env.machine),
                esc(&env.clock)
            );
        }
        for s in here {
            submission_table(&mut h, s);
        }
    }
    h.push_str("</body>\n</html>\n");
    h
}

fn submission_table(h: &mut String, s: &Shown) {
    let (e, sub) = (&s.e, &s.sub);
    let href = format!("{}/{}.html", url(&s.system), url(&sub.id));
    let _ = writeln!(h, "<h3><a href=\"{}\">{}</a> — {}</h3>", esc(&href), esc(&sub.id), esc(&sub.name));
    h.push_str(&banners(&e.records));
    let _ = writeln!(h, "<p class=\"meta\">{}</p>", meta(e).join(" · "));
    let present = |o: &String| e.records.iter().any(|r| r.op.name() == o);
    let ops: Vec<String> = e.family.all_ops().iter().map(|o| o.name().to_owned()).filter(present).collect();
    let cycles = !e.records.is_empty() && e.records.iter().all(|r| r.counter.hardware_cycles);
    h.push_str("<table>\n<tr><th>instance</th><th>KAT</th>");
    let ct = !e.ct.is_empty();
    if ct {
        h.push_str("<th>constant time<br><small>memcheck findings, timing</small></th>");
    }
    let san = !s.sanitized.is_empty();
    if san {
        h.push_str("<th>sanitizers<br><small>ASan and UBSan</small></th>");
    }
    for op in &ops {
        let unit = if cycles { "median time<br>cycles" } else { "median time" };
        let _ = write!(h, "<th>{}<br><small>{unit}</small></th>", esc(op));
    }
    for size in e.family.sizes {
        let _ = write!(h, "<th>{}<br><small>bytes</small></th>", esc(size.heading));
    }
    h.push_str("</tr>\n");
    for inst in &sub.instances {
        let records: Vec<&Record> = e.records.iter().filter(|r| r.label == inst.label).collect();
        let _ = write!(h, "<tr><td>{}</td><td>{}</td>", esc(&inst.label), esc(&kat_cell(e, &inst.label)));
        if ct {
            let _ = write!(h, "<td>{}</td>", esc(&crate::pages::constant_time::cell(&e.ct, &inst.label)));
        }
        if san {
            let _ = write!(h, "<td>{}</td>", esc(&crate::pages::sanitizers::cell(&s.sanitized, &inst.label)));
        }
        for op in &ops {
            let _ =
                write!(h, "<td class=\"n\">{}</td>", time_cell(records.iter().find(|r| r.op.name() == *op).copied()));
        }
        for size in e.family.sizes {
            let v = records.first().map_or("–".to_owned(), |r| report::size(size, r).to_string());
            let _ = write!(h, "<td class=\"n\">{v}</td>");
        }
        h.push_str("</tr>\n");
    }
    h.push_str("</table>\n");
}

/// Date, toolchain and harness commit of one submission's evidence.
fn meta(e: &Evidence) -> Vec<String> {
    let first = e.records.first();
    let mut m = Vec::new();
    let date = first.map(|r| r.started.as_str()).or(e.kat.as_ref().map(|k| k.started.as_str()));
    if let Some(d) = date {
        m.push(format!("measured {}", esc(d.get(..10).unwrap_or(d))));
    }
    if let Some(t) = first.map(|r| &r.toolchain).or(e.kat.as_ref().map(|k| &k.toolchain)) {
        let arch = t.arch.uname();
        m.push(format!("toolchain {} ({arch}): {}, {}", esc(&t.toolchain), esc(&t.gcc_version), esc(&t.cmake_version)));
    }
    if let Some(c) = first.map(|r| &r.harness_commit).or(e.kat.as_ref().map(|k| &k.harness_commit)) {
        m.push(format!("harness commit <code>{}</code>", esc(c)));
    }
    m
}

/// The KAT verdict of one instance: its status and each check that does not hold (the
/// corroborating and the tampered-input one), or why none is shown.
fn kat_cell(e: &Evidence, label: &str) -> String {
    let Some(i) = e.kat.as_ref().and_then(|k| k.instances.iter().find(|i| i.label == label)) else {
        return "not run".into();
    };
    if report::another_library(i, &e.records) {
        return "not shown: another library than the one timed".into();
    }
    let failed = [&i.check, &i.tampered].into_iter().flatten().filter(|c| !c.holds());
    let checks: String = failed.map(|c| format!("; {}: {}", c.check, c.verdict)).collect();
    format!("{}{checks}", i.status)
}

/// Median trial time, and median cycles where the counter counts them.
fn time_cell(r: Option<&Record>) -> String {
    let Some(r) = r else { return "–".into() };
    if r.emulated {
        return "emulated".into();
    }
    if r.host_check.credibility == Credibility::NotCredible {
        return "NOT CREDIBLE".into();
    }
    let trials = || r.trials.iter().map(|t| &t.trial);
    let mut cell = crate::pages::forms::time(stats::spread(&stats::kept_ns_per_op(trials())).median);
    if r.counter.hardware_cycles {
        let cycles = stats::spread(&stats::kept_ticks_per_op(trials())).median;
        let _ = write!(cell, "<br><small>{}</small>", crate::pages::forms::cycles(cycles));
    }
    let why = stats::indicative(r);
    if !why.is_empty() {
        let _ = write!(cell, "<br><small title=\"{}\">indicative</small>", esc(&why.join(", ")));
    }
    cell
}

/// One page: breadcrumb with the other systems, the banners, the report as HTML, the
/// charts after the performance table they are drawn from, section 7's files linked to
/// their copies.
fn page(c: &PageOf, md: &str, raw: &[(String, String)]) -> String {
    let (system, sub) = (c.system, c.sub);
    let mut h = head(&format!("{} on {system}", sub.id));
    let _ = write!(
        h,
        "<nav><a href=\"../index.html\">Performance measurements</a> › {} › {} · system:",
        esc(system),
        esc(&sub.id)
    );
    for s in c.systems.iter().filter(|(_, ids)| ids.contains(&sub.id)).map(|(s, _)| s) {
        if s == system {
            let _ = write!(h, " <strong>{}</strong>", esc(s));
        } else {
            let _ = write!(h, " <a href=\"../{}/{}.html\">{}</a>", url(s), url(&sub.id), esc(s));
        }
    }
    h.push_str("</nav>\n");
    h.push_str(&banners(&c.e.records));
    h.push_str(&linked_index(markdown_to_html(md, &charts(c.e)), raw));
    h.push_str("</body>\n</html>\n");
    h
}

/// Section 7's files as links to their copies in the site; a file the section does not
/// list (an index older than the set) is linked below it.
fn linked_index(html: String, raw: &[(String, String)]) -> String {
    let Some(at) = html.find("<h2>7. ") else { return html };
    let (head, mut tail) = (html[..at].to_owned(), html[at..].to_owned());
    let mut unlisted = Vec::new();
    for (path, href) in raw {
        let text = inline(crate::pages::md(path).trim());
        let cell = format!("<td>{text}</td></tr>");
        if tail.contains(&cell) {
            tail = tail.replacen(&cell, &format!("<td><a href=\"{}\">{text}</a></td></tr>", esc(href)), 1);
        } else {
            unlisted.push(format!("<li><a href=\"{}\">{}</a></li>\n", esc(href), esc(path)));
        }
    }
    if !unlisted.is_empty() {
        tail.push_str("<p>Not in the evidence index:</p>\n<ul>\n");
        tail.push_str(&unlisted.concat());
        tail.push_str("</ul>\n");
    }
    head + &tail
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
        if let Some(t) = line.strip_prefix("### ") {
            let _ = writeln!(h, "<h3>{}</h3>", inline(t));
        } else if let Some(t) = line.strip_prefix("## ") {
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
/// backslash escapes (`pages::md`).
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
            '[' if !code => match markdown_link(chars.as_str()) {
                Some((text, url, rest)) => {
                    let _ = write!(h, "<a href=\"{}\">{}</a>", esc(url), inline(text));
                    chars = rest.chars();
                }
                None => put(&mut h, c),
            },
            c => put(&mut h, c),
        }
    }
    if code {
        h.push_str("</code>");
    }
    h
}

/// `text](url)` after an unescaped `[`, the form `report::link` writes: an http(s)
/// address of plain characters only. Returns the text, the address and what follows.
fn markdown_link(s: &str) -> Option<(&str, &str, &str)> {
    let (text, after) = s.split_once("](")?;
    let (url, rest) = after.split_once(')')?;
    let plain = url.chars().all(|c| c.is_ascii_graphic() && !"()[]<>\\\"'`|".contains(c));
    let web = url.starts_with("https://") || url.starts_with("http://");
    (plain && web && !text.contains('[')).then_some((text, url, rest))
}

/// The charts of one page, from the timing records (none for emulated runs).
fn charts(e: &Evidence) -> String {
    // Figures the host's CPU check refuted are no dots (the table marks them).
    let credible = |r: &&Record| r.host_check.credibility != Credibility::NotCredible;
    let records: Vec<&Record> = e.records.iter().filter(credible).collect();
    if records.is_empty() || records.iter().any(|r| r.emulated) {
        return String::new();
    }
    let mut h = String::new();
    let _ = write!(
        h,
        "<figure>\n{}<figcaption>Figure 1. Time per operation of each parameter set: the dot is the median \
         trial, the line runs from the fastest to the slowest trial (log scale; the tables of section 4 give \
         the figures).</figcaption>\n</figure>\n",
        times_chart(&records)
    );
    let _ = write!(
        h,
        "<figure>\n{}<figcaption>Figure 2. Each trial's time per operation relative to the median trial of its \
         (instance, operation), on a log scale around 1; replaced trials hollow. From the table \
         below.</figcaption>\n</figure>\n",
        spread_chart(&records)
    );
    h.push_str("<table>\n<tr><th>instance</th><th>operation</th><th>trial / median trial</th></tr>\n");
    for r in &records {
        let median = r.aggregate.median_trial_ns.max(1e-9);
        let v: Vec<String> = r.trials.iter().map(|t| format!("{:.3}", t.trial.ns_per_op() / median)).collect();
        let _ =
            writeln!(h, "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", esc(&r.label), esc(r.op.name()), v.join(", "));
    }
    h.push_str("</table>\n");
    if records.iter().any(|r| crate::pages::report::message_bytes(e.family, r).is_some()) {
        let baselines: Vec<&Record> = e.baselines.iter().filter(credible).collect();
        let _ = write!(
            h,
            "<figure>\n{}<figcaption>Figure 3. Cycles (or counter ticks) per byte against the message size, \
             each parameter set and the same-run baselines (log scale; section 4 gives the \
             figures).</figcaption>\n</figure>\n",
            per_byte_chart(e.family, &records, &baselines)
        );
    }
    h
}

/// One row per message size, one series per instance and baseline: ticks per byte.
fn per_byte_chart(family: &crate::family::Family, records: &[&Record], baselines: &[&Record]) -> String {
    let all: Vec<&Record> = records.iter().chain(baselines).copied().collect();
    let mut series: Vec<&str> = Vec::new();
    for r in &all {
        if !series.contains(&r.label.as_str()) {
            series.push(&r.label);
        }
    }
    let sizes: Vec<u64> = family.ops.iter().filter_map(|o| o.bytes).collect();
    let per_byte = |r: &Record, bytes: u64| Point::dot(r.aggregate.mean_ticks / bytes as f64);
    let rows: Vec<Row> = sizes
        .iter()
        .map(|&bytes| Row {
            label: format!("{bytes} B"),
            points: series
                .iter()
                .map(|l| {
                    let at =
                        |r: &&&Record| r.label == *l && crate::pages::report::message_bytes(family, r) == Some(bytes);
                    all.iter().filter(at).map(|r| per_byte(r, bytes)).collect()
                })
                .collect(),
        })
        .collect();
    chart::draw(&Chart { rows: &rows, series: &series, axis: "cycles or ticks per byte", scale: Scale::Count })
}

/// One row per instance (in the records' order, the manifest's), one dot per operation
/// at its median trial with the range of its trials.
fn times_chart(records: &[&Record]) -> String {
    let mut labels: Vec<&str> = Vec::new();
    let mut ops: Vec<&str> = Vec::new();
    for r in records {
        if !labels.contains(&r.label.as_str()) {
            labels.push(&r.label);
        }
        if !ops.contains(&r.op.name()) {
            ops.push(r.op.name());
        }
    }
    let point = |r: &Record| {
        let s = stats::spread(&stats::kept_ns_per_op(r.trials.iter().map(|t| &t.trial)));
        Point { value: s.median, range: Some((s.min, s.max)), hollow: false }
    };
    let rows: Vec<Row> = labels
        .iter()
        .map(|l| Row {
            label: (*l).to_owned(),
            points: ops
                .iter()
                .map(|op| records.iter().filter(|r| r.label == *l && r.op.name() == *op).map(|r| point(r)).collect())
                .collect(),
        })
        .collect();
    chart::draw(&Chart { rows: &rows, series: &ops, axis: "time per operation", scale: Scale::Time })
}

/// One row per (instance, operation): every trial's ns per operation over the median.
fn spread_chart(records: &[&Record]) -> String {
    let rows: Vec<Row> = records
        .iter()
        .map(|r| {
            let median = r.aggregate.median_trial_ns.max(1e-9);
            let dots = r.trials.iter().map(|t| Point {
                value: t.trial.ns_per_op() / median,
                range: None,
                hollow: t.trial.replaced,
            });
            Row { label: format!("{} {}", r.label, r.op.name()), points: vec![dots.collect()] }
        })
        .collect();
    chart::draw(&Chart { rows: &rows, series: &["trial"], axis: "trial time ÷ median trial", scale: Scale::Ratio })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_site_inside_the_evidence_is_refused_however_it_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Utf8Path::from_path(tmp.path()).unwrap().canonicalize_utf8().unwrap();
        let evidence = root.join("out");
        std::fs::create_dir_all(evidence.join("x86_1")).unwrap();
        std::os::unix::fs::symlink(&evidence, root.join("alias")).unwrap();
        let usage = |out: Utf8PathBuf| {
            let e = refuse_overlap(&evidence, &out).unwrap_err();
            assert!(e.chain().any(|c| c.is::<crate::ui::Usage>()), "{e:#}");
            e.to_string()
        };
        assert!(usage(evidence.join("site")).contains("is inside the evidence set"));
        usage(evidence.clone());
        usage(root.join("alias/x86_1/new/site"));
        usage(root.join("elsewhere/../out/site"));
        assert!(usage(root.clone()).contains("is inside --out"));
        assert!(refuse_overlap(&evidence, &root.join("site")).is_ok());
        assert!(refuse_overlap(&evidence, &root.join("out/../site")).is_ok());
    }

    #[test]
    fn quick_unfixed_and_emulated_runs_carry_a_banner() {
        let golden = crate::project::root().join("xtask/tests/golden/record.json");
        let mut r: Record = crate::evidence::schema::read(&golden).unwrap().unwrap();
        r.host_gate.checks.retain(|c| c.ok);
        (r.quick, r.emulated) = (false, false);
        assert_eq!(banners(std::slice::from_ref(&r)), "", "a fixed host, a full run");
        r.quick = true;
        r.emulated = true;
        r.host_gate.checks.push(crate::measure::hostgate::Check {
            name: "<b>".into(),
            ok: false,
            detail: String::new(),
        });
        let b = banners(&[r]);
        for what in ["Quick run.", "Unfixed host.", "Emulated."] {
            assert!(b.contains(&format!("<strong>{what}</strong>")), "{b}");
        }
        assert!(b.contains("(&lt;b&gt;)"), "{b}");
    }

    #[test]
    fn only_plain_web_addresses_become_links() {
        let html = inline("[kem-07 report](https://example.org/a?b=1) and [x](javascript:alert(1))");
        assert_eq!(html, "<a href=\"https://example.org/a?b=1\">kem-07 report</a> and [x](javascript:alert(1))");
        assert_eq!(inline("\\[a\\](https://e.org)"), "[a](https://e.org)", "an escaped bracket is text");
        assert!(!inline("[a](https://e.org/\"onmouseover=x)").contains("<a "), "a quote ends no attribute");
    }

    #[test]
    fn raw_links_are_relative_and_encoded() {
        assert_eq!(url("x86_1/kat/a b/\"><x>.log"), "x86_1/kat/a%20b/%22%3E%3Cx%3E.log");
        assert_eq!(url("javascript:alert(1)"), "javascript%3Aalert%281%29");
    }

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
