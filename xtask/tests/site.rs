//! `cargo xtask site` on the golden evidence set (`common/golden_set.rs`: two systems,
//! a KEM and a signature submission; no container): pages for both systems and both
//! families with the breadcrumb linking them, charts beside their tables, byte-identical
//! output for the same evidence, the evidence left alone, and charts that a browser
//! (headless Chromium, installed by .ci/run) draws with non-zero size. The site has no
//! scripts: the test adds its own probe to a copy of a page to read the drawn sizes back.

mod common;

use std::path::Path;
use std::process::Command;

use common::golden_set::{self, KEM, SIG, SYSTEMS};
use common::xtask;

fn chromium(args: &[&str], profile: &Path) -> std::process::Output {
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]);
    cmd.args(["--disable-background-networking", "--disable-component-update", "--disable-sync"]);
    cmd.arg(format!("--user-data-dir={}", profile.display())).args(args);
    cmd.output().expect("chromium (Debian package chromium, installed by .ci/run)")
}

fn section<'a>(page: &'a str, from: &str, to: &str) -> &'a str {
    &page[page.find(from).unwrap_or_else(|| panic!("no {from}"))..page.find(to).unwrap_or_else(|| panic!("no {to}"))]
}

/// Every file below `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(dir).unwrap().to_str().unwrap().to_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn site_renders_every_system_and_family_deterministically_with_visible_charts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    golden_set::write(&out);
    let out_s = out.to_str().unwrap();
    let before: Vec<(String, Vec<u8>)> =
        files(&out).into_iter().map(|f| (f.clone(), std::fs::read(out.join(&f)).unwrap())).collect();

    let (s1, s2) = (tmp.path().join("site1"), tmp.path().join("site2"));
    for s in [&s1, &s2] {
        assert!(xtask(&["site", out_s, "--out", s.to_str().unwrap()], None).status.success());
    }
    // Every page of both systems and both families, and nothing else.
    let mut want = vec!["index.html".to_owned()];
    for system in SYSTEMS {
        for id in [KEM, SIG] {
            want.extend([format!("{system}/{id}.html"), format!("{system}/{id}.md")]);
        }
    }
    want.sort();
    assert_eq!(files(&s1), want);
    for f in &want {
        assert_eq!(std::fs::read(s1.join(f)).unwrap(), std::fs::read(s2.join(f)).unwrap(), "{f} differs");
    }
    let after: Vec<(String, Vec<u8>)> =
        files(&out).into_iter().map(|f| (f.clone(), std::fs::read(out.join(&f)).unwrap())).collect();
    assert!(before == after, "the site leaves the evidence alone");
    assert!(xtask(&["evidence", "check", out_s], None).status.success());

    let index = std::fs::read_to_string(s1.join("index.html")).unwrap();
    for system in SYSTEMS {
        for id in [KEM, SIG] {
            assert!(index.contains(&format!("href=\"{system}/{id}.html\"")), "{system}/{id}: {index}");
        }
    }
    // The Markdown page of the site is the report's page.
    let md = std::fs::read_to_string(s1.join("x86_1/pqclean-ml-kem.md")).unwrap();
    let layout = xtask::evidence::Layout::new(camino::Utf8Path::from_path(&out).unwrap(), "x86_1");
    assert_eq!(md, xtask::pages::report::render(&layout, &golden_set::submission(KEM)).unwrap());

    let page = std::fs::read_to_string(s1.join("arm_1/pqclean-ml-kem.html")).unwrap();
    assert!(
        page.contains("› arm_1 › pqclean-ml-kem · system: <strong>arm_1</strong> <a href=\"../x86_1/pqclean-ml-kem.html\">x86_1</a>"),
        "{page}"
    );
    assert!(page.contains("<figcaption>Figure 1.") && page.contains("<figcaption>Figure 2."));
    assert!(page.contains("<td>ML-KEM-512</td><td>keygen</td>"), "the tables stay beside the charts");
    assert!(page.contains("Parameter sets measured: ML-KEM-512, ML-KEM-768, ML-KEM-1024"), "{page}");
    assert!(page.contains("performance on aarch64 (system arm_1)"), "{page}");
    assert!(!page.contains("<script"), "the site needs no scripts");
    assert!(!page.contains(tmp.path().to_str().unwrap()), "no path of the machine that ran it");

    // The signature page: its family's words, operations, check and sizes.
    let sig = std::fs::read_to_string(s1.join("x86_1/pqclean-ml-dsa.md")).unwrap();
    assert!(sig.contains("- Category: public-key algorithm; function: digital signature"), "{sig}");
    let perf = section(&sig, "## 4.", "## 5.");
    let timing = section(&sig, "## 4.", "Signature lengths");
    for label in ["ML-DSA-44", "ML-DSA-65", "ML-DSA-87"] {
        for op in ["keygen", "sign", "verify", "sign_msgs"] {
            assert_eq!(timing.matches(&format!("| {label} | {op} | ")).count(), 1, "{label} {op}: {timing}");
        }
    }
    assert!(!perf.contains("| enc |") && !perf.contains("| dec |"), "{perf}");
    assert!(perf.contains("| 6715 (5 × 1343); 3 failed signing attempts retried |"), "{perf}");
    assert!(perf.contains("Signature lengths returned by the timed calls (bytes):"), "{perf}");
    assert!(perf.contains("| ML-DSA-87 | sign | 4627 | 4627.0 | 4627 | 6730 |"), "{perf}");
    let kat = section(&sig, "## 3.", "## 4.");
    assert!(kat.contains("| ML-DSA-65 | guide | PASS; verify contract: accepts-invalid [1] |"), "{kat}");
    assert!(kat.contains("[1] ML-DSA-65: record 2: verify returned 0 on a modified message"), "{kat}");
    let sizes = section(&sig, "## 6.", "## Symmetric");
    assert!(sizes.contains("| instance | public key | secret key | signature | basis |"), "{sizes}");
    assert!(sizes.contains("| ML-DSA-65 | 1952 | 4032 | 3309 | encoded |"), "{sizes}");
    assert!(!sizes.contains("ciphertext"), "{sizes}");
    let sig_html = std::fs::read_to_string(s1.join("x86_1/pqclean-ml-dsa.html")).unwrap();
    assert!(sig_html.contains("<td>ML-DSA-44</td><td>sign</td>") && sig_html.contains("<figcaption>Figure 1."));
    assert!(sig_html.contains("<title>ML-DSA-87 sign_msgs: "), "the chart has a bar per operation");

    // The browser's view: screenshots, and the drawn size of every chart and bar.
    let profile = tmp.path().join("chromium-profile");
    for (name, file) in [("index.png", "index.html"), ("page.png", "arm_1/pqclean-ml-kem.html")] {
        let shot = tmp.path().join(name);
        let url = format!("file://{}", s1.join(file).display());
        let o = chromium(&["--window-size=1000,2400", &format!("--screenshot={}", shot.display()), &url], &profile);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(std::fs::metadata(&shot).unwrap().len() > 10_000, "{name} is blank");
    }
    let probe = "<script>window.onload=()=>{const r=[...document.querySelectorAll('svg, svg rect, svg circle')]\
                 .map(e=>{const b=e.getBoundingClientRect();return e.tagName+' '+Math.round(b.width)+'x'+Math.round(b.height)});\
                 const p=document.createElement('pre');p.id='probe';p.textContent=r.join('\\n');document.body.appendChild(p);}</script>";
    for (name, html) in [("kem", &page), ("sig", &sig_html)] {
        let probed = tmp.path().join(format!("probed-{name}.html"));
        std::fs::write(&probed, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
        let o = chromium(&["--dump-dom", &format!("file://{}", probed.display())], &profile);
        let dom = String::from_utf8_lossy(&o.stdout);
        let sizes: Vec<&str> =
            dom.split("<pre id=\"probe\">").nth(1).unwrap().split("</pre>").next().unwrap().lines().collect();
        assert_eq!(sizes.iter().filter(|s| s.starts_with("svg ")).count(), 2, "{name}: {sizes:?}");
        assert!(sizes.iter().filter(|s| s.starts_with("rect ")).count() >= 9, "{name}: {sizes:?}");
        for s in &sizes {
            let (w, h) = s.split_once(' ').unwrap().1.split_once('x').unwrap();
            assert!(w.parse::<u32>().unwrap() > 0 && h.parse::<u32>().unwrap() > 0, "{name}: {s} is not drawn");
        }
    }
}
