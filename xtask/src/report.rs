//! `cargo xtask report`: render a submission's evidence as a page with the structure
//! of the seed pages (sections 1–7), from the records alone. Emulated timings are
//! never shown as measurements.

use std::fmt::Write as _;

use anyhow::{bail, Result};
use serde_json::Value;
use xshell::Shell;

use crate::evidence::{self, Layout};
use crate::flags::Report;
use crate::submission::Submission;
use crate::{project, stats};

const OPS: [&str; 3] = ["keygen", "enc", "dec"];

fn read_json(path: &camino::Utf8Path) -> Option<Value> {
    std::fs::read_to_string(path).ok().and_then(|t| serde_json::from_str(&t).ok())
}

fn kib(v: &Value) -> String {
    v.as_i64().filter(|k| *k >= 0).map_or_else(|| "-".into(), |k| format!("{k} KiB"))
}

impl Report {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        let layout = Layout::new(&self.out, &self.system);
        for id in &self.ids {
            let sub = Submission::load(id)?;
            let page = render(&layout, &sub)?;
            let path = layout.report(&sub.id);
            std::fs::create_dir_all(path.parent().unwrap())?;
            project::write_atomic(&path, page.as_bytes())?;
            println!("{path}");
        }
        evidence::write_index(&self.out)?;
        Ok(())
    }
}

pub fn render(layout: &Layout, sub: &Submission) -> Result<String> {
    let kat = read_json(&layout.kat_summary(&sub.id));
    let env = read_json(&layout.environment(&sub.id));
    let records: Vec<(String, &str, Value)> = sub
        .instances
        .iter()
        .flat_map(|i| OPS.iter().map(move |op| (i.label.clone(), *op)))
        .filter_map(|(l, op)| read_json(&layout.record(&sub.id, &l, op)).map(|r| (l, op, r)))
        .collect();
    if kat.is_none() && records.is_empty() {
        bail!("no evidence for {} under {}: run verify and bench first", sub.id, layout.system_dir);
    }
    let first = records.first().map(|r| &r.2);
    let system = layout.system_dir.file_name().unwrap_or_default();
    let arch = first
        .map(|r| r["toolchain"]["arch"].clone())
        .or_else(|| kat.as_ref().map(|k| k["toolchain"]["arch"].clone()))
        .and_then(|a| a.as_str().map(str::to_owned))
        .unwrap_or_else(|| "unknown".into());
    let emulated = records.iter().any(|r| r.2["emulated"] == true);
    let mut p = String::new();
    let w = &mut p;
    writeln!(w, "# {} {} — performance on {arch} (system {system})\n", sub.id, sub.name)?;
    writeln!(w, "Independent measurement by ngcc-repro. Not a submitter self-assessment.\n")?;

    writeln!(w, "## 1. Basic information\n")?;
    writeln!(w, "- Category: public-key algorithm; function: key encapsulation")?;
    writeln!(w, "- Algorithm: {}", sub.name)?;
    writeln!(w, "- Parameter sets: {}", sub.instances.iter().map(|i| i.label.as_str()).collect::<Vec<_>>().join(", "))?;
    if let Some(src) = first.map(|r| &r["source"]).or(kat.as_ref().map(|k| &k["source"])) {
        writeln!(w, "- Source: {}", compact(src))?;
    }
    if let Some(r) = first {
        writeln!(w, "- Harness commit: {}", r["harness_commit"].as_str().unwrap_or("-"))?;
    }

    writeln!(w, "\n## 2. Assessment environment\n")?;
    match env.as_ref().or(first.map(|r| &r["environment"])) {
        Some(e) => {
            writeln!(w, "| item | value |\n|---|---|")?;
            let rows = [
                ("processor", format!("{} ({} logical CPUs)", s(&e["processor"]), e["logical_cpus"])),
                ("machine", s(&e["machine"])),
                ("clock", s(&e["clock"])),
                ("memory", format!("{} MiB", e["memory_mib"])),
                ("OS / kernel", format!("{} / {}", s(&e["os"]), s(&e["kernel"]))),
                ("compiler / build tool", format!("{} / {}", s(&e["compiler"]), s(&e["build_tool"]))),
                ("campaign start / end (UTC)", format!("{} / {}", s(&e["campaign_start"]), s(&e["campaign_end"]))),
            ];
            for (k, v) in rows {
                writeln!(w, "| {k} | {v} |")?;
            }
            let warnings: Vec<&str> =
                e["warnings"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if !warnings.is_empty() {
                writeln!(w, "\nWarnings: {}", warnings.join("; "))?;
            }
        }
        None => writeln!(w, "No timing run: no environment manifest.")?,
    }

    writeln!(w, "\n## 3. Functional testing (KAT)\n")?;
    match &kat {
        Some(k) => {
            writeln!(w, "KAT digests checked against `{}`.\n", s(&k["kat_manifest"]))?;
            writeln!(w, "| instance | build flags | KAT |\n|---|---|---|")?;
            for i in k["instances"].as_array().into_iter().flatten() {
                writeln!(w, "| {} | {} | {} |", s(&i["label"]), s(&i["flag_set"]), s(&i["status"]))?;
            }
        }
        None => writeln!(w, "No verify run in this evidence set.")?,
    }

    writeln!(w, "\n## 4. Performance\n")?;
    if emulated {
        writeln!(
            w,
            "Timed under qemu-user emulation: these runs are not measurements of {arch} and no figures are \
             shown. The raw records stay in the evidence set, marked `emulated`."
        )?;
    } else if !records.is_empty() {
        let cycles = records.iter().all(|r| r.2["counter"]["hardware_cycles"] == true);
        let counter = first.map(|r| s(&r["counter"]["name"])).unwrap_or_default();
        let hz = first.and_then(|r| r["counter"]["measured_hz"].as_f64()).unwrap_or(0.0);
        let head =
            if cycles { "mean cycles".to_owned() } else { format!("mean ticks ({counter} @ {:.3} GHz)", hz / 1e9) };
        writeln!(w, "| instance | operation | {head} | mean time | ops/s | median trial | n (trials × iters) |")?;
        writeln!(w, "|---|---|---|---|---|---|---|")?;
        for (label, op, r) in &records {
            let a = &r["aggregate"];
            let f = |k: &str| a[k].as_f64().unwrap_or(0.0);
            writeln!(
                w,
                "| {label} | {op} | {} | {} | {} | {} | {} ({} × {}) |",
                stats::human_count(f("mean_ticks")),
                stats::human_time(f("mean_ns")),
                stats::three_digits(f("ops_per_s")),
                stats::human_time(f("median_trial_ns")),
                a["n"],
                a["trials"],
                a["iterations"]
            )?;
        }
        if records.iter().any(|r| r.2["quick"] == true) {
            writeln!(w, "\nQuick mode: short trials for CI; the figures are indicative only.")?;
        }
    } else {
        writeln!(w, "No timing run in this evidence set.")?;
    }

    writeln!(w, "\n## 5. Resource consumption\n")?;
    if !records.is_empty() {
        writeln!(
            w,
            "Static memory is the sum of the library's PT_LOAD segments; peak memory is the process high-water \
             mark (VmHWM) including the driver and libc.\n"
        )?;
        writeln!(
            w,
            "| instance | operation | static: ELF image (bytes) | baseline RSS | peak RSS |\n|---|---|---|---|---|"
        )?;
        for (label, op, r) in &records {
            let m = &r["memory"];
            writeln!(
                w,
                "| {label} | {op} | {} | {} | {} |",
                m["static_image_bytes"],
                kib(&m["baseline_rss_kib"]),
                kib(&m["peak_rss_kib"])
            )?;
        }
    }

    writeln!(w, "\n## 6. Transmission and storage overhead\n")?;
    writeln!(w, "Public key, ciphertext and shared secret from the catalog (`submissions/external_sizes.csv`) where it has a row, else the API; secret keys are API figures.\n")?;
    writeln!(
        w,
        "| instance | public key | secret key | ciphertext | shared secret | basis |\n|---|---|---|---|---|---|"
    )?;
    let mut seen = Vec::new();
    for (label, _, r) in &records {
        if seen.contains(label) {
            continue;
        }
        seen.push(label.clone());
        let (api, ext) = (&r["sizes"]["api"], &r["sizes"]["external"]);
        let pick = |k: &str| if ext.is_null() { api[k].clone() } else { ext["sizes"][k].clone() };
        let basis = if ext.is_null() { "API".to_owned() } else { s(&ext["basis"]) };
        writeln!(w, "| {label} | {} | {} | {} | {} | {basis} |", pick("pk"), api["sk"], pick("ct"), pick("ss"))?;
    }
    if let Some(audit) = read_json(&layout.size_audit(&sub.id)).and_then(|a| a.as_array().cloned()) {
        if !audit.is_empty() {
            writeln!(w, "\nSize audit ({} disagreements):", audit.len())?;
            for d in audit {
                writeln!(w, "- {} {}: API {}, catalog {}", s(&d["instance"]), s(&d["field"]), d["api"], d["catalog"])?;
            }
        }
    }

    writeln!(w, "\n## 7. Raw evidence index\n")?;
    writeln!(w, "Paths are relative to the evidence root; `{}` lists every file with its SHA-256.\n", evidence::INDEX)?;
    writeln!(w, "| file | sha256 |\n|---|---|")?;
    let root = layout.system_dir.parent().unwrap_or(&layout.system_dir);
    let prefixes = [layout.kat_dir(&sub.id), layout.records_dir(&sub.id)];
    for (path, sha) in evidence::read_index(root).unwrap_or_default() {
        if prefixes.iter().any(|p| root.join(&path).starts_with(p)) {
            writeln!(w, "| {path} | {}… |", &sha[..16])?;
        }
    }
    Ok(p)
}

fn s(v: &Value) -> String {
    v.as_str().map_or_else(|| if v.is_null() { "-".into() } else { v.to_string() }, str::to_owned)
}

fn compact(src: &Value) -> String {
    match s(&src["kind"]).as_str() {
        "crate" => format!("crate {} {} (sha256 {})", s(&src["name"]), s(&src["version"]), s(&src["checksum"])),
        "archive" => format!("archive {} (sha256 {})", s(&src["file"]), s(&src["sha256"])),
        _ => format!("{} {} (tree sha256 {})", s(&src["note"]), s(&src["path"]), s(&src["tree_sha256"])),
    }
}
