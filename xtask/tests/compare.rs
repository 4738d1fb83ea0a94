//! `cargo xtask compare` on the golden evidence set (`common/golden_set.rs`, no
//! container): the two systems of one set (x86-64 and AArch64) are refused with every
//! difference named in words (exit 1), and compared with `--allow-differences` with the
//! differences on the page; two builds of the same packages with other engine image IDs
//! are compared, other packages refused; each row says whether it is within noise;
//! rows follow the manifest (512 before 1024), or the records' start order without
//! one; `--json` parses back; a missing folder is a usage error (exit 2); hostile names
//! inject nothing into the page.

mod common;

use std::path::Path;

use camino::Utf8Path;
use common::golden_set::{self, labels, ops, KEM, SIG};
use common::xtask;
use xtask::evidence::schema::{self, Comparison, ImageBasis, PackageDigest, Record, Significance};
use xtask::evidence::Layout;
use xtask::measure::stats;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every record of `id` on `system` in `out` that `only` picks, changed by `edit` and
/// written back (the aggregate made again from the trials).
fn edit_where(out: &Path, system: &str, id: &str, only: &dyn Fn(&str, &str) -> bool, edit: &dyn Fn(&mut Record)) {
    let layout = Layout::new(Utf8Path::from_path(out).unwrap(), system);
    for label in labels(id) {
        for op in ops(id).iter().filter(|op| only(&label, op.name())) {
            let path = layout.record(id, &label, op.name());
            let mut r: Record = schema::read(&path).unwrap().unwrap();
            edit(&mut r);
            r.aggregate = stats::aggregate(&r.trials.iter().map(|t| t.trial.clone()).collect::<Vec<_>>());
            schema::write(&path, &r).unwrap();
        }
    }
    // As the run that wrote them would have left them: indexed.
    xtask::evidence::write_index(Utf8Path::from_path(out).unwrap()).unwrap();
}

fn edit_records(out: &Path, system: &str, id: &str, edit: &dyn Fn(&mut Record)) {
    edit_where(out, system, id, &|_, _| true, edit);
}

/// Each kept trial's time scaled by `f[slot]`.
fn scale(r: &mut Record, f: [f64; 5]) {
    for t in &mut r.trials {
        (t.trial.ns, t.trial.ticks) =
            ((t.trial.ns as f64 * f[t.slot]) as u64, (t.trial.ticks as f64 * f[t.slot]) as u64);
    }
}

/// The rows of the comparison table: (submission, instance, operation, B / A, noise).
fn rows(page: &str) -> Vec<[String; 5]> {
    page.lines()
        .filter(|l| ["| pqclean-", "| hash-01 ", "| baseline-hash ", "| kex-02 "].iter().any(|p| l.starts_with(p)))
        .map(|l| {
            let c: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            [c[0], c[1], c[2], c[5], c[6]].map(str::to_owned)
        })
        .collect()
}

fn packages(count: usize, fill: &str) -> Option<PackageDigest> {
    Some(PackageDigest { count, sha256: fill.repeat(64 / fill.len()) })
}

#[test]
fn the_two_systems_are_refused_then_compared_with_their_differences_named() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    golden_set::write(&out);
    let (a, b) = (format!("{}:x86_1", s(&out)), format!("{}:arm_1", s(&out)));
    let refused = xtask(&["compare", &a, &b], None);
    assert_eq!(refused.status.code(), Some(1), "a refusal is a finding");
    let err = stderr(&refused);
    for d in [
        "architecture: x86_64 (A) vs aarch64 (B)",
        "library sha256: ",
        "image: engine image IDs differ (",
        "compared by image ID",
        "CPU model: 12th Gen Intel(R) Core(TM) i7-12700 (A) vs Neoverse-N1 (B)",
        "--allow-differences",
    ] {
        assert!(err.contains(d), "{d}: {err}");
    }
    assert!(!err.contains("compiler:") && !err.contains("counter:"), "only what differs: {err}");
    assert!(!err.contains("Some(") && !err.contains("None"), "no Rust in messages: {err}");
    let bare = xtask(&["compare", s(&out), s(&out)], None);
    assert!(bare.status.code() == Some(2) && stderr(&bare).contains("name one as"), "two systems: say which");

    let page_dir = tmp.path().join("comparison");
    let allowed = xtask(&["compare", &a, &b, "--allow-differences", "--out", s(&page_dir)], None);
    assert!(allowed.status.success());
    let page = std::fs::read_to_string(page_dir.join("compare.md")).unwrap();
    assert!(page.contains("WARNING: compared with --allow-differences"), "{page}");
    // 9 KEM, 12 signature, 24 hash, 32 hash-baseline and 27 key-exchange operations.
    assert!(page.contains("- architecture: x86_64 (A) vs aarch64 (B) (104 operations)"), "{page}");
    let library: Vec<&str> = page.lines().filter(|l| l.starts_with("- library sha256: ")).collect();
    assert_eq!(library.len(), 1, "one line per kind of difference: {page}");
    assert!(library[0].starts_with("- library sha256: 16 pairs of values over 104 operations, such as "), "{page}");
    let rows = rows(&page);
    assert_eq!(rows.len(), 104, "{page}");
    for r in &rows {
        // arm_1's golden figures are 1.5 times x86_1's, every trial apart.
        assert_eq!(r[3], "1.500", "{r:?}");
        assert_eq!(r[4], "significant (p = 0.008)", "{r:?}");
    }
    // The manifest's order: instances 512, 768, 1024, operations as the family lists them.
    let kem: Vec<(String, String)> =
        rows.iter().filter(|r| r[0] == KEM).map(|r| (r[1].clone(), r[2].clone())).collect();
    let want: Vec<(String, String)> = labels(KEM)
        .into_iter()
        .flat_map(|l| ops(KEM).into_iter().map(move |o| (l.clone(), o.name().to_owned())))
        .collect();
    assert_eq!(kem, want, "{page}");
    assert_eq!(kem[0].0, "ML-KEM-512");
    assert!(page.contains("| pqclean-ml-dsa | ML-DSA-44 | sign | 298 µs | 448 µs | 1.500 |"), "{page}");
    // A hash function's message sizes compare like any operation.
    assert!(page.contains("| hash-01 | AFS-TrEDM-512 | hash_4096 | 25.6 µs | 38.4 µs | 1.500 |"), "{page}");
    // So do a key exchange's passes.
    assert!(page.contains("| kex-02 | AFS_KEX_C128 | pass2 | 240 µs | 361 µs | 1.500 |"), "{page}");
    assert!(page.contains("pqclean-ml-kem in its manifest's order (submissions/pqclean-ml-kem.toml)"), "{page}");
    let html = std::fs::read_to_string(page_dir.join("compare.html")).unwrap();
    assert!(html.contains("<svg") && html.contains("<title>pqclean-ml-dsa ML-DSA-87 sign_msgs: B / A 1.500"), "{html}");
    assert!(html.contains("no unit, log scale") && html.contains("ML-KEM-512 keygen</text>"), "{html}");
    let (at_512, at_1024) = (html.find(">ML-KEM-512 keygen<").unwrap(), html.find(">ML-KEM-1024 keygen<").unwrap());
    assert!(at_512 < at_1024, "the chart follows the table's order");
}

/// A: x86_1's KEM; B: the same packages built again (another engine image ID and root
/// filesystem) on another machine.
fn rebuilt(tmp: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    golden_set::write_part(&a, &["x86_1"], &[KEM]);
    golden_set::write_part(&b, &["x86_1"], &[KEM]);
    edit_records(&a, "x86_1", KEM, &|r| {
        r.toolchain.packages = packages(412, "1a2b");
        r.toolchain.rootfs_sha256 = Some("5".repeat(64));
    });
    edit_records(&b, "x86_1", KEM, &|r| {
        r.environment.machine = "golden x86_1, second machine".into();
        r.toolchain.packages = packages(412, "1a2b");
        r.toolchain.image_id = Some("3db49962".repeat(8));
        r.toolchain.rootfs_sha256 = Some("6".repeat(64));
    });
    // Trials that interleave with A's, trials all 2 % slower, and three kept trials a side.
    edit_where(&b, "x86_1", KEM, &|l, o| (l, o) == ("ML-KEM-512", "keygen"), &|r| {
        scale(r, [1.001, 0.999, 1.0, 0.998, 1.003])
    });
    edit_where(&b, "x86_1", KEM, &|l, o| (l, o) == ("ML-KEM-768", "enc"), &|r| scale(r, [1.02; 5]));
    for side in [&a, &b] {
        edit_where(side, "x86_1", KEM, &|l, o| (l, o) == ("ML-KEM-1024", "dec"), &|r| {
            r.trials[3].trial.replaced = true;
            r.trials[4].trial.replaced = true;
        });
    }
    (a, b)
}

#[test]
fn two_builds_of_the_same_packages_are_compared_and_other_packages_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = rebuilt(tmp.path());
    let c = xtask(&["compare", s(&a), s(&b)], None);
    assert!(c.status.success(), "another image ID, the same packages: {}", stderr(&c));
    let page = common::stdout(&c);
    assert!(!page.contains("WARNING"), "{page}");
    assert!(page
        .contains("- images compared by their installed packages and versions (package lock digest) (9 operations)"));
    assert!(
        page.contains("- note: root filesystems differ byte for byte (sha256 555555555555… (A) vs 666666666666… (B))")
    );
    let rows = rows(&page);
    let row = |l: &str, o: &str| rows.iter().find(|r| (r[1].as_str(), r[2].as_str()) == (l, o)).unwrap().clone();
    let noise = row("ML-KEM-512", "keygen");
    assert!(noise[4].starts_with("within noise (p = ") && noise[3] == "1.000", "{noise:?}");
    assert_eq!(row("ML-KEM-768", "enc")[4], "significant (p = 0.008)", "2 % slower in every trial");
    assert_eq!(row("ML-KEM-1024", "dec")[4], "too few trials (3 and 3)");
    assert_eq!(row("ML-KEM-512", "enc")[4], "within noise (p = 1.00)", "the same trials");
    assert!(page.contains("Within noise: a two-sided Mann–Whitney rank test"), "the rule is on the page");

    edit_records(&b, "x86_1", KEM, &|r| r.toolchain.packages = packages(415, "3c4d"));
    let refused = xtask(&["compare", s(&a), s(&b)], None);
    assert_eq!(refused.status.code(), Some(1));
    let err = stderr(&refused);
    assert!(
        err.contains("image: package lists differ (412 (A) vs 415 (B) packages; sha256 1a2b1a2b1a2b… vs 3c4d3c4d3c4d…) (9 operations)"),
        "{err}"
    );
    // Older records without the package digest: the root filesystem decides, and says so.
    edit_records(&b, "x86_1", KEM, &|r| r.toolchain.packages = None);
    let older = stderr(&xtask(&["compare", s(&a), s(&b)], None));
    assert!(older.contains("image: root filesystems differ (sha256 555555555555… (A) vs 666666666666… (B); compared by root filesystem: no package list recorded on side B)"), "{older}");
}

#[test]
fn json_is_the_comparison_and_a_refusal_lists_its_differences() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = rebuilt(tmp.path());
    let c = xtask(&["--json", "compare", s(&a), s(&b)], None);
    assert!(c.status.success());
    let cmp: Comparison = serde_json::from_str(&common::stdout(&c)).expect("stdout is one JSON comparison");
    assert!(cmp.compared && cmp.differences.is_empty());
    assert_eq!((cmp.a.system.as_str(), cmp.rows.len()), ("x86_1", 9));
    assert_eq!(cmp.image_basis.len(), 1);
    assert_eq!((cmp.image_basis[0].basis, cmp.image_basis[0].operations), (ImageBasis::PackageLock, 9));
    let first = &cmp.rows[0];
    assert_eq!((first.instance.as_str(), first.op.as_str()), ("ML-KEM-512", "keygen"));
    assert_eq!(first.significance, Significance::NotSignificant);
    assert!(first.ratio_low < 1.0 && first.ratio_high > 1.0 && first.p_value > 0.05, "{first:?}");
    assert_eq!((first.a.trials, first.b.trials), (5, 5));
    assert!(stderr(&c).contains("| pqclean-ml-kem | ML-KEM-512 | keygen |"), "the page goes to stderr");

    edit_records(&b, "x86_1", KEM, &|r| r.toolchain.gcc_version = "gcc 15".into());
    let refused = xtask(&["--json", "compare", s(&a), s(&b)], None);
    assert_eq!(refused.status.code(), Some(1));
    let cmp: Comparison = serde_json::from_str(&common::stdout(&refused)).unwrap();
    assert!(!cmp.compared && cmp.rows.is_empty());
    assert_eq!(cmp.differences.len(), 1);
    assert_eq!(cmp.differences[0].what, "compiler");
    assert_eq!(cmp.differences[0].operations.len(), 9);
}

#[test]
fn a_missing_folder_or_system_is_a_usage_error() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    golden_set::write_part(&out, &["x86_1"], &[SIG]);
    let missing = tmp.path().join("nothing");
    let c = xtask(&["compare", s(&out), s(&missing)], None);
    assert!(c.status.code() == Some(2) && stderr(&c).contains("no evidence directory"), "{}", stderr(&c));
    // The missing folder is named even beside a set that would be refused itself.
    let empty = tmp.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let c = xtask(&["compare", s(&empty), s(&missing)], None);
    let said = format!("no evidence directory {}", s(&missing));
    assert!(c.status.code() == Some(2) && stderr(&c).contains(&said), "{}", stderr(&c));
    let c = xtask(&["site", s(&missing), "--out", s(&tmp.path().join("site"))], None);
    assert!(c.status.code() == Some(2) && stderr(&c).contains(&said), "{}", stderr(&c));
    assert_eq!(stderr(&c).matches("No such file").count(), 0, "{}", stderr(&c));
    let c = xtask(&["compare", s(&out), &format!("{}:arm_9", s(&out))], None);
    assert!(c.status.code() == Some(2) && stderr(&c).contains("(it has: x86_1)"), "{}", stderr(&c));
    let file = tmp.path().join("a-file");
    std::fs::write(&file, "").unwrap();
    let c = xtask(&["compare", s(&out), s(&out), "--out", s(&file)], None);
    assert_eq!(c.status.code(), Some(2), "--out naming a file");
    let inside = out.join("x86_1").join("..").join("pages");
    let c = xtask(&["compare", s(&out), s(&out), "--out", s(&inside)], None);
    assert!(c.status.code() == Some(2) && stderr(&c).contains("inside the evidence set"), "{}", stderr(&c));
    assert!(!inside.exists(), "nothing written");
}

#[test]
fn without_a_manifest_rows_follow_the_records_start_order() {
    let tmp = tempfile::tempdir().unwrap();
    let root = golden_set::checkout(&tmp.path().join("checkout"));
    std::fs::remove_file(root.join("submissions").join(format!("{KEM}.toml"))).unwrap();
    let out = tmp.path().join("out");
    golden_set::write_part(&out, &["x86_1"], &[KEM]);
    // Made 1024 first, then 512, then 768: neither text nor manifest order.
    edit_records(&out, "x86_1", KEM, &|r| {
        let hour = match r.label.as_str() {
            "ML-KEM-1024" => 8,
            "ML-KEM-512" => 9,
            _ => 10,
        };
        r.started = format!("2026-11-30T{hour:02}:00:00Z");
    });
    let c = golden_set::xtask_in(&root, &["compare", s(&out), s(&out)]);
    assert!(c.status.success());
    let page = common::stdout(&c);
    let seen: Vec<String> = rows(&page).iter().map(|r| r[1].clone()).collect();
    assert_eq!(
        seen.iter().step_by(3).cloned().collect::<Vec<_>>(),
        ["ML-KEM-1024", "ML-KEM-512", "ML-KEM-768"],
        "{page}"
    );
    assert!(page.contains("pqclean-ml-kem in the order side A's records were made (this checkout has no manifest"));
}

#[test]
fn hostile_names_inject_nothing_and_write_nowhere_else() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for side in [&a, &b] {
        golden_set::write_part(side, &["x86_1"], &[SIG]);
        edit_records(side, "x86_1", SIG, &|r| {
            // One instance keeps its submission: a label its manifest does not know.
            if r.label != "ML-DSA-87" {
                r.id = "../../<img src=x onerror=alert(1)>.toml".into();
            }
            r.label = format!("<script>alert(1)</script>{}|../../x\u{1b}[31m", r.label);
            r.environment.processor = "<b>cpu</b>\u{1b}[2J".into();
        });
    }
    edit_records(&b, "x86_1", SIG, &|r| r.environment.processor = "other <i>cpu</i>".into());
    let page_dir = tmp.path().join("comparison");
    let refused = xtask(&["compare", s(&a), s(&b)], None);
    let err = stderr(&refused);
    assert!(refused.status.code() == Some(1) && !err.contains('\u{1b}'), "control characters shown, not sent: {err}");
    assert!(err.contains("CPU model: <b>cpu</b>\\u{1b}[2J (A) vs other <i>cpu</i> (B)"), "{err}");
    let c = xtask(&["compare", s(&a), s(&b), "--allow-differences", "--out", s(&page_dir)], None);
    assert!(c.status.success());
    assert!(!common::stdout(&c).contains('\u{1b}'));
    let html = std::fs::read_to_string(page_dir.join("compare.html")).unwrap();
    for bad in ["<script", "<img", "<b>", "<i>"] {
        assert!(!html.contains(bad), "{bad} in {html}");
    }
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;ML-DSA-44|../../x"), "{html}");
    let md = std::fs::read_to_string(page_dir.join("compare.md")).unwrap();
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with("| ..") || l.starts_with("| pqclean-ml-dsa")).collect();
    assert_eq!(table.len(), 12, "{md}");
    assert!(table.iter().all(|l| l.matches(" | ").count() == 9), "a `|` in a name splits no cell: {md}");
    let mut made: Vec<String> =
        std::fs::read_dir(tmp.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    made.sort();
    assert_eq!(made, ["a", "b", "comparison"]);
    let mut pages: Vec<String> =
        std::fs::read_dir(&page_dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    pages.sort();
    assert_eq!(pages, ["compare.html", "compare.md"]);
}

#[test]
fn the_rank_test_matches_its_exact_distribution() {
    let (low, high) = ([1.0, 2.0, 3.0, 4.0, 5.0], [6.0, 7.0, 8.0, 9.0, 10.0]);
    assert!((stats::mann_whitney_p(&low, &high) - 2.0 / 252.0).abs() < 1e-12);
    assert!((stats::mann_whitney_p(&high, &low) - 2.0 / 252.0).abs() < 1e-12, "two-sided");
    // Values as exact enumeration gives them (U = 1, U = 2, interleaved).
    assert!(
        (stats::mann_whitney_p(&[1.0, 2.0, 3.0, 4.0, 6.0], &[5.0, 7.0, 8.0, 9.0, 10.0]) - 4.0 / 252.0).abs() < 1e-12
    );
    assert!(
        (stats::mann_whitney_p(&[1.0, 2.0, 3.0, 5.0, 6.0], &[4.0, 7.0, 8.0, 9.0, 10.0]) - 8.0 / 252.0).abs() < 1e-12
    );
    assert!((stats::mann_whitney_p(&[1.0, 3.0, 5.0, 7.0, 9.0], &[2.0, 4.0, 6.0, 8.0, 10.0]) - 0.690_476).abs() < 1e-6);
    assert_eq!(stats::mann_whitney_p(&[1.0; 3], &[1.0; 3]), 1.0, "all tied");
    assert_eq!(stats::mann_whitney_p(&[], &[1.0]), 1.0);
    assert!((stats::smallest_p(3, 3) - 0.1).abs() < 1e-12 && stats::smallest_p(5, 5) < 0.01);
    // Above 20 values, the normal approximation.
    let a: Vec<f64> = (0..12).map(f64::from).collect();
    let b: Vec<f64> = (12..24).map(f64::from).collect();
    assert!(stats::mann_whitney_p(&a, &b) < 1e-4);
    let (even, odd): (Vec<f64>, Vec<f64>) = (0..24).map(f64::from).partition(|x| (*x as u32).is_multiple_of(2));
    assert!(stats::mann_whitney_p(&even, &odd) > 0.5);
}

/// Two quick sets timed on unfixed hosts: why every row says `too few trials` is said
/// once, above the table (quick runs, unfixed hosts, what that means for the figures),
/// and the rows keep their short note; a fixed host drops its part, one quick side is
/// named as such.
#[test]
fn quick_unfixed_sides_are_said_once_above_the_table() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    for side in [&a, &b] {
        golden_set::write_part(side, &["x86_1"], &[KEM]);
        // As `bench --quick --allow-unfixed-host` on a VM leaves them: three trials.
        edit_records(side, "x86_1", KEM, &|r| {
            r.quick = true;
            r.trials.truncate(3);
        });
    }
    let c = xtask(&["compare", s(&a), s(&b)], None);
    assert!(c.status.success(), "{}", stderr(&c));
    let page = common::stdout(&c);
    let table = page.find("| submission | instance |").unwrap();
    let quick = "Quick runs: both sides timed with `bench --quick` (3 trials of about 50 ms each, for CI), not the \
        reference plan. With that few trials no ordering of them reaches p < 0.05, so 9 of 9 rows say `too few \
        trials`: no verdict either way, not \"no difference\".";
    let unfixed = "Unfixed hosts: both sides timed with `--allow-unfixed-host` although bench's host gate failed \
        (boost, fixed frequency, governor, pinned): frequency scaling, turbo and other load move such figures, by 2× \
        or more between two runs of the same code. Read the ratios as indications; for a verdict, time both sides \
        on fixed hosts without `--quick`.";
    for said in [quick, unfixed] {
        assert_eq!(page.matches(said).count(), 1, "said once: {said}\n{page}");
        assert!(page.find(said).unwrap() < table, "above the table: {page}");
    }
    let rows = rows(&page);
    assert_eq!(rows.len(), 9);
    assert!(rows.iter().all(|r| r[4] == "too few trials (3 and 3)"), "{rows:?}");
    // Beside each row's figures: which side's are indicative, and why.
    let marked = page.lines().filter(|l| l.ends_with(" | A and B: quick run, unfixed host, 3 trials |")).count();
    assert_eq!(marked, 9, "{page}");
    let json = xtask(&["--json", "compare", s(&a), s(&b)], None);
    let cmp: Comparison = serde_json::from_str(&common::stdout(&json)).unwrap();
    assert_eq!(cmp.caveats, [quick, unfixed]);

    // A fixed host on both sides, and only B quick.
    for side in [&a, &b] {
        edit_records(side, "x86_1", KEM, &|r| {
            r.host_gate.checks.iter_mut().for_each(|c| c.ok = true);
            r.host_gate.overridden = false;
            r.quick = side == &b;
        });
    }
    let page = common::stdout(&xtask(&["compare", s(&a), s(&b)], None));
    assert!(!page.contains("Unfixed hosts:"), "{page}");
    assert!(page.contains("Quick runs: side B timed with `bench --quick`"), "{page}");
}
