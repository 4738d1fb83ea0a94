//! The "Constant time" section of a page and the site's column, from `ct` records.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::Result;

use crate::evidence::schema::{CtFinding, CtRecord, CtStatus, CtTimingStatus};
use crate::family::Family;
use crate::pages::report::md;

/// Findings shown per operation; the record has them all.
const SHOWN: usize = 5;

pub fn section(w: &mut String, family: &Family, records: &[CtRecord]) -> Result<()> {
    let Some(ct) = family.ct else { return Ok(()) };
    writeln!(w, "\n## Constant time\n")?;
    let Some(first) = records.first() else {
        writeln!(w, "Not checked: run `cargo xtask ct`.")?;
        return Ok(());
    };
    let secrets: Vec<String> = ct.ops.iter().map(|o| format!("{} {}", o.id, o.secrets)).collect();
    writeln!(
        w,
        "Method: each secret-handling operation ran under valgrind's memcheck ({}, in the analysis image of {}) \
         with its secrets marked undefined ({}), {} runs on their own DRNG seeds; public outputs are declassified \
         when the call returns. The build is the guide build with debug information (`-g`). A finding is a \
         conditional branch, a memory address or a system-call argument computed from a secret, at its line in \
         the submission's tree.\n",
        md(&first.analysis.valgrind_version),
        md(&first.toolchain.toolchain),
        secrets.join("; "),
        first.runs
    )?;
    writeln!(
        w,
        "Limits: only the paths these runs took are seen; stock memcheck does not see variable-time instructions \
         (division); cache-line effects of addresses that look public are not seen; a library can mark its \
         secrets defined (its valgrind client requests are counted). No finding is no proof of constant time. \
         Branches the compiler introduced are seen: the binary is tested.\n"
    )?;
    writeln!(w, "| instance | operation | status | findings | secret bytes | DRNG bytes | memcheck wall |\n|---|---|---|---|---|---|---|")?;
    for r in records {
        writeln!(
            w,
            "| {} | {} | {} | {} | {} | {} | {:.1} s |",
            md(&r.label),
            r.op.name(),
            r.status.as_str(),
            r.findings.len(),
            r.secret_bytes,
            r.random_bytes,
            r.wall_s
        )?;
    }
    declassified(w, records)?;
    timing(w, records)?;
    for r in records.iter().filter(|r| r.detail.is_some() || !r.findings.is_empty()) {
        writeln!(w, "\n**{} {}** ({}):\n", md(&r.label), r.op.name(), r.status.as_str())?;
        if let Some(d) = &r.detail {
            writeln!(w, "- {}", md(d))?;
        }
        let groups = by_function(&r.findings);
        for (function, found) in groups.iter().take(SHOWN) {
            writeln!(w, "- `{}`: {}", md(function), found.join("; "))?;
        }
        if groups.len() > SHOWN {
            writeln!(w, "- … {} more function(s) in the record", groups.len() - SHOWN)?;
        }
    }
    Ok(())
}

/// What the manifests declare public in each instance's secret key, once per instance.
fn declassified(w: &mut String, records: &[CtRecord]) -> Result<()> {
    let mut labels: Vec<&str> = records.iter().map(|r| r.label.as_str()).collect();
    labels.dedup();
    for label in labels {
        // Key ranges hold for every operation, public-derived values for one: all of them.
        let mut all: Vec<String> = Vec::new();
        for d in records.iter().filter(|r| r.label == label).flat_map(|r| &r.declassified) {
            if !all.contains(&md(d)) {
                all.push(md(d));
            }
        }
        if !all.is_empty() {
            writeln!(w, "\nDeclassified by the manifest for {}: {}.", md(label), all.join("; "))?;
        }
    }
    Ok(())
}

/// The timing tests' table, when any operation had one.
fn timing(w: &mut String, records: &[CtRecord]) -> Result<()> {
    let timed: Vec<(&CtRecord, &crate::evidence::schema::CtTiming)> =
        records.iter().filter_map(|r| r.timing.as_ref().map(|t| (r, t))).collect();
    let Some((_, first)) = timed.first() else { return Ok(()) };
    writeln!(
        w,
        "\nTiming test (dudect-style, for decapsulation and for every operation with a finding): {}; the two \
         classes interleaved at random. Clock: {}. t is Welch's, the largest |t| of the first-order test on all \
         measurements, on percentile crops and of the second-order test; above {} the classes' timings differ. \
         A low t is no proof of constant time: only these inputs, on this machine, were timed.\n",
        md(&first.classes),
        md(&first.clock),
        first.threshold
    )?;
    writeln!(
        w,
        "| instance | operation | timing | t | test of the largest \\|t\\| | measurements (class 0 / 1) | mean class 0 | mean class 1 |\n|---|---|---|---|---|---|---|---|"
    )?;
    for (r, t) in &timed {
        let figures = matches!(t.status, CtTimingStatus::Differs | CtTimingStatus::NoneFound);
        let (tv, n, m0, m1) = if figures {
            let ns = |v: f64| crate::measure::stats::human_time(v);
            (format!("{:.2}", t.t), format!("{} / {}", t.n[0], t.n[1]), ns(t.mean_ns[0]), ns(t.mean_ns[1]))
        } else {
            ("–".into(), "–".into(), "–".into(), "–".into())
        };
        let (label, op, test) = (md(&r.label), r.op.name(), md(&t.test));
        writeln!(w, "| {label} | {op} | {} | {tv} | {test} | {n} | {m0} | {m1} |", t.status.as_str())?;
    }
    for (r, t) in &timed {
        if let Some(d) = &t.detail {
            writeln!(w, "\n- {} {} timing: {}", md(&r.label), r.op.name(), md(d))?;
        }
    }
    Ok(())
}

/// Findings grouped by the function they are in, in the order of their first (most
/// frequent) finding: "branch at file:line ×count".
fn by_function(findings: &[CtFinding]) -> Vec<(&str, Vec<String>)> {
    let mut order: Vec<&str> = Vec::new();
    let mut groups: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for f in findings {
        let name = f.at.function.as_str();
        if !groups.contains_key(name) {
            order.push(name);
        }
        let caller = f.stack.iter().find(|s| s.function != f.at.function);
        let via = caller.map(|c| format!(", from `{}`", md(&c.function))).unwrap_or_default();
        groups.entry(name).or_default().push(format!(
            "{} at `{}:{}` ×{}{via}",
            f.kind.as_str(),
            md(&f.at.file),
            f.at.line,
            f.count
        ));
    }
    order.into_iter().map(|n| (n, groups.remove(n).unwrap_or_default())).collect()
}

/// The site's cell for one instance: its distinct findings over the operations checked.
pub fn cell(records: &[CtRecord], label: &str) -> String {
    let mine: Vec<&CtRecord> = records.iter().filter(|r| r.label == label).collect();
    if mine.is_empty() {
        return "not checked".into();
    }
    let n: usize = mine.iter().map(|r| r.findings.len()).sum();
    let open: Vec<&str> = mine
        .iter()
        .filter(|r| matches!(r.status, CtStatus::Failed | CtStatus::Undetermined | CtStatus::NothingPoisoned))
        .map(|r| r.op.name())
        .collect();
    let mut head = if n == 0 { format!("none found ({} ops)", mine.len()) } else { format!("{n} finding(s)") };
    let differs: Vec<&str> = mine
        .iter()
        .filter(|r| r.timing.as_ref().is_some_and(|t| t.status == CtTimingStatus::Differs))
        .map(|r| r.op.name())
        .collect();
    if !differs.is_empty() {
        head = format!("{head}; timing differs: {}", differs.join(", "));
    }
    if open.is_empty() {
        head
    } else {
        format!("{head}; no conclusion: {}", open.join(", "))
    }
}
