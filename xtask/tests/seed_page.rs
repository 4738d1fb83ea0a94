//! The page against a seed page: an evidence set written here from the figures of the
//! seed page for kem-07 on x86_1 (BRQC, Debian 13, gcc 14.2.0-19) renders the title,
//! section 1's items in the seed's order, and sections 2–6
//! whose table cells equal the seed's, number formatting included. The expected cells
//! below are copied from that page; the records are built from its figures.

mod common;

use camino::Utf8PathBuf;
use xtask::evidence::schema::{self, Environment, Record, Summary};
use xtask::evidence::Layout;
use xtask::family::OpId;
use xtask::kat::verify::Status;
use xtask::measure::sizes::{Basis, CatalogRow, Sizes};

/// (label, op, mean cycles, mean ns, ops/s, median trial ns, trials, iterations,
/// static image, baseline RSS, peak RSS).
type Row = (&'static str, &'static str, f64, f64, f64, f64, usize, u64, u64, i64, i64);
const FIGURES: [Row; 9] = [
    ("BRQC-128", "keygen", 3.03e6, 1.45e6, 690.0, 1.45e6, 5, 673, 137057, 1796, 1920),
    ("BRQC-128", "enc", 6.65e6, 3.17e6, 315.0, 3.17e6, 5, 313, 137057, 1856, 1928),
    ("BRQC-128", "dec", 94.14e6, 45e6, 22.2, 45e6, 5, 23, 137057, 1860, 1932),
    ("BRQC-256", "keygen", 9.07e6, 4.33e6, 231.0, 4.33e6, 5, 245, 137913, 1800, 1936),
    ("BRQC-256", "enc", 18.72e6, 8.94e6, 112.0, 8.93e6, 5, 116, 137913, 1884, 1988),
    ("BRQC-256", "dec", 256.46e6, 122e6, 8.16, 123e6, 5, 20, 137913, 1916, 1996),
    ("BRQC-512", "keygen", 26.53e6, 12.7e6, 78.9, 12.7e6, 5, 82, 138001, 1828, 1988),
    ("BRQC-512", "enc", 55.45e6, 26.5e6, 37.8, 26.5e6, 5, 38, 138001, 2000, 2072),
    ("BRQC-512", "dec", 1.07e9, 510e6, 1.96, 510e6, 5, 20, 138001, 2056, 2128),
];

/// The seed page's tables of sections 2–6, one row per line, cells as printed there.
const SEED: &[&[&str]] = &[
    &["processor", "12th Gen Intel(R) Core(TM) i7-12700 (CPU 2, one core)"],
    &["clock", "max 2.10 GHz, governor performance, turbo off, SMT off"],
    &["memory", "31788 MiB"],
    &["OS / kernel", "Debian GNU/Linux 13 (trixie) / 6.12.107+deb13-amd64"],
    &["compiler / build tool", "gcc (Debian 14.2.0-19) 14.2.0 / cmake version 3.31.6"],
    &["campaign start / end (UTC)", "2026-09-25T10:02:21 / 2026-09-28T10:51:21"],
    &["BRQC-128", "guide", "PASS"],
    &["BRQC-256", "guide", "PASS"],
    &["BRQC-512", "guide", "PASS"],
    &["BRQC-128", "keygen", "3.03 M", "1.45 ms", "690", "1.45 ms", "3365 (5 × 673)"],
    &["BRQC-128", "enc", "6.65 M", "3.17 ms", "315", "3.17 ms", "1565 (5 × 313)"],
    &["BRQC-128", "dec", "94.14 M", "45 ms", "22.2", "45 ms", "115 (5 × 23)"],
    &["BRQC-256", "keygen", "9.07 M", "4.33 ms", "231", "4.33 ms", "1225 (5 × 245)"],
    &["BRQC-256", "enc", "18.72 M", "8.94 ms", "112", "8.93 ms", "580 (5 × 116)"],
    &["BRQC-256", "dec", "256.46 M", "122 ms", "8.16", "123 ms", "100 (5 × 20)"],
    &["BRQC-512", "keygen", "26.53 M", "12.7 ms", "78.9", "12.7 ms", "410 (5 × 82)"],
    &["BRQC-512", "enc", "55.45 M", "26.5 ms", "37.8", "26.5 ms", "190 (5 × 38)"],
    &["BRQC-512", "dec", "1.07 G", "510 ms", "1.96", "510 ms", "100 (5 × 20)"],
    &["BRQC-128", "keygen", "137057", "1796 KiB", "1920 KiB"],
    &["BRQC-128", "enc", "137057", "1856 KiB", "1928 KiB"],
    &["BRQC-128", "dec", "137057", "1860 KiB", "1932 KiB"],
    &["BRQC-256", "keygen", "137913", "1800 KiB", "1936 KiB"],
    &["BRQC-256", "enc", "137913", "1884 KiB", "1988 KiB"],
    &["BRQC-256", "dec", "137913", "1916 KiB", "1996 KiB"],
    &["BRQC-512", "keygen", "138001", "1828 KiB", "1988 KiB"],
    &["BRQC-512", "enc", "138001", "2000 KiB", "2072 KiB"],
    &["BRQC-512", "dec", "138001", "2056 KiB", "2128 KiB"],
    &["BRQC-128", "1954", "2066", "3844", "64"],
    &["BRQC-256", "3345", "3471", "6626", "64"],
    &["BRQC-512", "6562", "6712", "13060", "64"],
];

fn golden<T: schema::Evidence>(file: &str) -> T {
    let path = Utf8PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden")).join(file);
    schema::read(&path).unwrap().unwrap()
}

fn environment() -> Environment {
    let mut e: Environment = golden("environment.json");
    e.processor = "12th Gen Intel(R) Core(TM) i7-12700".into();
    e.gate.cpu = Some(2);
    e.clock = "max 2.10 GHz, governor performance, turbo off, SMT off".into();
    e.memory_mib = 31788;
    e.os = "Debian GNU/Linux 13 (trixie)".into();
    e.kernel = "6.12.107+deb13-amd64".into();
    e.compiler = "gcc (Debian 14.2.0-19) 14.2.0".into();
    e.build_tool = "cmake version 3.31.6".into();
    e.campaign_start = "2026-09-25T10:02:21".into();
    e.campaign_end = Some("2026-09-28T10:51:21".into());
    e
}

fn record(row: &Row, env: &Environment) -> Record {
    let &(label, op, cycles, ns, ops, median, trials, iterations, image, baseline, peak) = row;
    let mut r: Record = golden("record.json");
    (r.id, r.label, r.op, r.system, r.quick) = ("kem-07".into(), label.into(), OpId::new(op), "x86_1".into(), false);
    r.counter.hardware_cycles = true;
    let a = &mut r.aggregate;
    (a.mean_ticks, a.mean_ns, a.ops_per_s, a.median_trial_ns) = (cycles, ns, ops, median);
    (a.trials, a.iterations, a.n) = (trials, iterations, trials as u64 * iterations);
    (r.memory.static_image_bytes, r.memory.baseline_rss_kib, r.memory.peak_rss_kib) = (image, baseline, peak);
    r.memory.stack = None; // the seed page has no stack figures (the golden one is ML-KEM's)
    let sizes = |l| match l {
        "BRQC-128" => Sizes::of([("pk", 1954), ("sk", 2066), ("ct", 3844), ("ss", 64)]),
        "BRQC-256" => Sizes::of([("pk", 3345), ("sk", 3471), ("ct", 6626), ("ss", 64)]),
        _ => Sizes::of([("pk", 6562), ("sk", 6712), ("ct", 13060), ("ss", 64)]),
    };
    r.sizes.api = sizes(label);
    r.sizes.external =
        Some(CatalogRow { id: "kem-07".into(), instance: label.into(), sizes: sizes(label), basis: Basis::Encoded });
    r.environment = env.clone();
    r
}

/// The cells of every table row of `text` between two headings.
fn rows(text: &str, from: &str, to: &str) -> Vec<Vec<String>> {
    let part = &text[text.find(from).unwrap()..text.find(to).unwrap()];
    part.lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| item") && !l.starts_with("| instance"))
        .map(|l| l.trim_matches('|').split(" | ").map(|c| c.trim().to_owned()).collect())
        .collect()
}

#[test]
fn sections_two_to_six_equal_the_seed_page() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Utf8PathBuf::from_path_buf(tmp.path().join("out")).unwrap();
    let layout = Layout::new(&out, "x86_1");
    let env = environment();
    let mut summary: Summary = golden("summary.json");
    summary.id = "kem-07".into();
    let template = summary.instances[0].clone();
    summary.instances = ["BRQC-128", "BRQC-256", "BRQC-512"]
        .iter()
        .map(|l| xtask::evidence::schema::InstanceResult {
            label: (*l).into(),
            status: Status::Pass,
            library: None, // the seed page has no code size (the golden reading is ML-KEM's)
            ..template.clone()
        })
        .collect();
    std::fs::create_dir_all(layout.kat_dir("kem-07")).unwrap();
    std::fs::create_dir_all(layout.records_dir("kem-07")).unwrap();
    schema::write(&layout.kat_summary("kem-07"), &summary).unwrap();
    schema::write(&layout.environment("kem-07"), &env).unwrap();
    for row in &FIGURES {
        schema::write(&layout.record("kem-07", row.0, row.1), &record(row, &env)).unwrap();
    }
    xtask::evidence::write_index(&out).unwrap();
    let run = common::xtask(&["report", "kem-07", "--system", "x86_1", "--out", out.as_str()], None);
    assert!(run.status.success());
    let page = std::fs::read_to_string(layout.report("kem-07")).unwrap();

    // Title, the sentence under it and section 1's items in the seed's order.
    assert!(page.starts_with("# kem-07 BRQC — performance on x86-64 (system x86_1)\n"), "{page}");
    assert!(page.contains("the structure of the NICCS x86 self-assessment guide, §3.5 (1)–(7)"), "{page}");
    let basic = &page[page.find("## 1.").unwrap()..page.find("## 2.").unwrap()];
    let items: Vec<&str> = basic.lines().filter_map(|l| l.strip_prefix("- ")?.split(':').next()).collect();
    assert_eq!(items[..6], common::SEED_ITEMS, "{basic}");
    assert!(basic.contains("- Parameter sets: BRQC-128, BRQC-256, BRQC-512 — security evaluation: "), "{basic}");

    let mut ours = rows(&page, "## 2.", "## 3.");
    ours.retain(|r| r[0] != "machine"); // a row the seed pages do not have
    ours.extend(rows(&page, "## 3.", "## 4."));
    // Section 4's figures (this page adds the noise column; the spread table after them).
    ours.extend(rows(&page, "## 4.", "Spread over the trials").into_iter().map(|mut r| {
        r.truncate(7);
        r
    }));
    ours.extend(rows(&page, "## 5.", "## 6."));
    // Section 6: the seed's four size columns (this page adds the catalog's basis).
    ours.extend(rows(&page, "## 6.", "## Symmetric").into_iter().map(|mut r| {
        r.truncate(5);
        r
    }));
    let seed: Vec<Vec<String>> = SEED.iter().map(|r| r.iter().map(|c| (*c).to_owned()).collect()).collect();
    assert_eq!(ours, seed, "{page}");
}
