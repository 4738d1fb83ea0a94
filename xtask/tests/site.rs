//! `cargo xtask site` on the golden evidence set (`common/golden_set.rs`: two systems,
//! a KEM and a signature submission; no container): an index with the figures, pages for
//! both systems and both families with the breadcrumb linking them, charts beside their
//! tables, copies of the raw files the pages link to, byte-identical output for the same
//! evidence, the evidence left alone, and charts that a browser (headless Chromium,
//! installed by .ci/run) draws with non-zero size. The site has no scripts: the test adds
//! its own probe to a copy of a page to read the drawn sizes back. The other tests are
//! a hostile evidence set's: markup and paths in its text and names, a link in it, and
//! a site asked to go inside it.

mod common;

use std::path::Path;
use std::process::Command;

use common::golden_set::{self, IDS, KEM, SIG, SYSTEMS};
use common::xtask;
use xtask::evidence::schema::{self, Record};

fn chromium(args: &[&str], profile: &Path) -> std::process::Output {
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]);
    cmd.args(["--disable-background-networking", "--disable-component-update", "--disable-sync"]);
    cmd.arg(format!("--user-data-dir={}", profile.display())).args(args);
    cmd.output().expect("chromium (Debian package chromium, installed by .ci/run)")
}

/// From the first `from` to the first `to` after it.
fn section<'a>(page: &'a str, from: &str, to: &str) -> &'a str {
    let rest = &page[page.find(from).unwrap_or_else(|| panic!("no {from}"))..];
    &rest[..rest.find(to).unwrap_or_else(|| panic!("no {to} after {from}"))]
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
        let o = xtask(&["site", out_s, "--out", s.to_str().unwrap()], None);
        assert!(o.status.success() && common::stdout(&o).starts_with("site: 10 pages in "));
    }
    // Every page of both systems and every family (the hash baselines have their own),
    // and nothing else.
    let mut want = vec!["index.html".to_owned()];
    for system in SYSTEMS {
        for id in IDS {
            want.extend([format!("{system}/{id}.html"), format!("{system}/{id}.md")]);
        }
    }
    // And a copy of every evidence file, the index with them.
    want.extend(files(&out).into_iter().map(|f| format!("raw/{f}")));
    want.sort();
    assert_eq!(files(&s1), want);
    for f in files(&out) {
        assert_eq!(std::fs::read(s1.join("raw").join(&f)).unwrap(), std::fs::read(out.join(&f)).unwrap(), "{f}");
    }
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
    // The index has the figures: per system and submission, in the manifest's order.
    assert!(index.contains("<h2 id=\"x86_1\">x86_1</h2>") && index.contains("12th Gen Intel(R) Core(TM) i7-12700"));
    let x86 = section(&index, "<h2 id=\"x86_1\">", "</body>");
    let kem = section(x86, "pqclean-ml-kem</a>", "</table>");
    assert!(kem.contains("<th>keygen<br><small>median time<br>cycles</small></th>"), "{kem}");
    assert!(kem.contains("<th>ciphertext<br><small>bytes</small></th>"), "{kem}");
    // The constant-time column: the instance's distinct findings over its checked operations,
    // and the operations whose timing differs or is inconclusive (keygen's |t| = 9.6 on
    // 4740 measurements, in the golden records: below the margin rule's 10,000).
    assert!(kem.contains("<th>constant time<br><small>memcheck findings, timing</small></th>"), "{kem}");
    let ml512 = "<tr><td>ML-KEM-512</td><td>PASS</td><td>4 finding(s); timing inconclusive: keygen</td><td class=\"n\">18.2 µs<br><small>";
    assert!(kem.contains(ml512), "{kem}");
    let sig = section(x86, "pqclean-ml-dsa</a>", "</table>");
    assert!(!sig.contains("constant time"), "no column where no instance was checked: {sig}");
    assert!(kem.contains("<td class=\"n\">1568</td><td class=\"n\">3168</td>"), "{kem}");
    let order: Vec<usize> =
        ["ML-KEM-512<", "ML-KEM-768<", "ML-KEM-1024<"].iter().map(|l| kem.find(l).unwrap()).collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "manifest order, not text order: {kem}");
    assert!(kem.contains("measured 2026-11-30 · toolchain debian-13 (x86_64): gcc (Debian 14.2.0-19) 14.2.0"), "{kem}");
    assert!(kem.contains("harness commit <code>d0182238705e687ce981081e8523acf7429c777f-dirty</code>"), "{kem}");
    assert!(kem.contains("<strong>Unfixed host.</strong>"), "the golden records' host gate failed: {kem}");
    let sig_row = section(x86, "pqclean-ml-dsa</a>", "</table>");
    assert!(sig_row.contains("<td>ML-DSA-65</td><td>PASS; verify contract: accepts-invalid</td>"), "{sig_row}");
    let kex = section(x86, "kex-02</a>", "</table>");
    assert!(kex.contains("<td>AFS_KEX_C128</td><td>PASS; length contract: breach</td>"), "{kex}");
    assert!(kex.contains("<th>pass4<br><small>median time"), "a key exchange's passes are columns: {kex}");
    let kex_page = std::fs::read_to_string(s1.join("x86_1/kex-02.html")).unwrap();
    assert!(kex_page.contains("768 / 784 / 16 / 0 (never set)"), "the bandwidth table: {kex_page}");
    // The stack high-water mark stands beside the RSS figures, with its method.
    let kem_page = std::fs::read_to_string(s1.join("x86_1/pqclean-ml-kem.html")).unwrap();
    let resources = section(&kem_page, "baseline RSS", "</table>");
    assert!(resources.contains("peak RSS") && resources.contains("stack, one call (bytes)"), "{resources}");
    assert!(
        kem_page.contains("Stack is pqm4&#39;s method") || kem_page.contains("Stack is pqm4's method"),
        "{kem_page}"
    );

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
    // Axis titles with units; a ratio axis with no tick at or below 0; rows in manifest order.
    let fig1 = section(&page, "<svg", "<figcaption>Figure 1.");
    // 27 µs to 101 µs: ticks from 10 µs to 1 ms, each with its unit.
    assert!(fig1.contains(">time per operation (log scale, unit on each tick)</text>"), "{fig1}");
    assert!(fig1.contains(">10 µs</text>") && fig1.contains(">1 ms</text>"), "{fig1}");
    assert!(fig1.find(">ML-KEM-512<").unwrap() < fig1.find(">ML-KEM-1024<").unwrap(), "{fig1}");
    let fig2 = section(&page, "</figure>\n<figure>", "<figcaption>Figure 2.");
    assert!(fig2.contains(">trial time ÷ median trial (log scale)</text>"), "{fig2}");
    let ticks: Vec<f64> = fig2
        .split("text-anchor=\"middle\">")
        .skip(1)
        .filter_map(|t| t.split('<').next().unwrap().parse().ok())
        .collect();
    assert!(ticks.len() >= 3 && ticks.iter().all(|t| *t > 0.0), "{ticks:?}");
    assert!(page.contains("<strong>Unfixed host.</strong>"), "{page}");
    // Raw records and logs: linked from the page, copied into the site.
    // Section 7 is a table (instance | item | file), paths under the system's folder, the
    // constant-time records among them.
    for (instance, item, raw) in [
        ("ML-KEM-512", "KAT log (sha256 ", "kat/pqclean-ml-kem/ML-KEM-512.log"),
        ("ML-KEM-1024", "timing dec", "records/pqclean-ml-kem/ML-KEM-1024__dec.json"),
        ("ML-KEM-768", "hash profile enc", "profile/pqclean-ml-kem/ML-KEM-768__enc.json"),
        ("ML-KEM-512", "constant time keygen", "ct/pqclean-ml-kem/ML-KEM-512__keygen.json"),
    ] {
        let row = format!("<td><a href=\"../raw/arm_1/{raw}\">{raw}</a></td></tr>");
        let at = page.find(&row).unwrap_or_else(|| panic!("{raw} not linked: {page}"));
        let line = &page[page[..at].rfind("<tr>").unwrap()..at];
        assert!(line.starts_with(&format!("<tr><td>{instance}</td><td>{item}")), "{line}");
    }
    assert!(page.contains("<tr><th>instance</th><th>item</th><th>file</th></tr>"), "{page}");
    assert!(page.contains("Paths are relative to <code>arm_1/</code> in the evidence set"), "{page}");
    assert!(!page.contains("**"), "no Markdown left as text: {page}");
    assert!(page.contains("<h3>ML-KEM-512 keygen (findings)</h3>"), "{page}");
    assert!(page.contains("<td>ML-KEM-512</td><td>keygen</td>"), "the tables stay beside the charts");
    assert!(page.contains("Parameter sets: ML-KEM-512, ML-KEM-768, ML-KEM-1024 — security evaluation: not given"));
    assert!(page.contains("performance on AArch64 (system arm_1)"), "{page}");
    assert!(page.contains("the structure of the NICCS ARM self-assessment guide"), "{page}");
    let crate_page = "crate pqcrypto-mlkem 0.1.1 (checksum pinned in sources/Cargo.lock)";
    assert!(page.contains(&format!("<li>Submission: {crate_page}</li>")), "{page}");
    assert!(!page.contains("<script"), "the site needs no scripts");
    assert!(!page.contains(tmp.path().to_str().unwrap()), "no path of the machine that ran it");

    // The signature page: its family's words, operations, check and sizes.
    let sig = std::fs::read_to_string(s1.join("x86_1/pqclean-ml-dsa.md")).unwrap();
    assert!(sig.contains("- Category: public-key algorithm; function: digital signature"), "{sig}");
    let perf = section(&sig, "## 4.", "## 5.");
    let timing = section(&sig, "## 4.", "Spread over the trials");
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
    let probe = "<script>window.onload=()=>{const r=[...document.querySelectorAll('svg, svg circle')]\
                 .map(e=>{const b=e.getBoundingClientRect();return e.tagName+' '+Math.round(b.width)+'x'+Math.round(b.height)});\
                 const p=document.createElement('pre');p.id='probe';p.textContent=r.join('\\n');document.body.appendChild(p);}</script>";
    // The hash page: its files, message sizes, baselines and the per-byte chart.
    let hash = std::fs::read_to_string(s1.join("x86_1/hash-01.md")).unwrap();
    assert!(hash.contains("- Category: cryptographic hash algorithm; function: hash"), "{hash}");
    let kat = section(&hash, "## 3.", "## 4.");
    assert_eq!(kat.matches("| AFS-TrEDM-768 | KAT_").count(), 4, "one row per KAT file: {kat}");
    let perf = section(&hash, "## 4.", "## 5.");
    assert!(perf.contains("| instance | message | mean cycles | cycles/byte | mean time | MB/s | n |"), "{perf}");
    assert!(perf.contains("| AFS-TrEDM-512 | 65536 B | 855.02 k | 13.0 | 407 µs | 161 | 12305 (5 × 2461) |"), "{perf}");
    assert!(perf.contains("| AFS-TrEDM-1024 | 4096 B | 1.99 × | 3.12 × | 2.58 × | 1.40 × |"), "{perf}");
    assert!(!hash.contains("## 6.") && !hash.contains("## Symmetric"), "{hash}");
    let hash_html = std::fs::read_to_string(s1.join("x86_1/hash-01.html")).unwrap();
    assert!(hash_html.contains("<figcaption>Figure 3. Cycles (or counter ticks) per byte"), "{hash_html}");
    assert!(hash_html.contains(">cycles or ticks per byte (log scale)</text>"), "{hash_html}");
    assert!(hash_html.contains("<title>65536 B SHA3-512: 15.6</title>"), "baselines are series: {hash_html}");
    for (name, html, charts) in [("kem", &page, 2), ("sig", &sig_html, 2), ("hash", &hash_html, 3)] {
        let probed = tmp.path().join(format!("probed-{name}.html"));
        std::fs::write(&probed, html.replace("</body>", &format!("{probe}</body>"))).unwrap();
        let o = chromium(&["--dump-dom", &format!("file://{}", probed.display())], &profile);
        let dom = String::from_utf8_lossy(&o.stdout);
        let sizes: Vec<&str> =
            dom.split("<pre id=\"probe\">").nth(1).unwrap().split("</pre>").next().unwrap().lines().collect();
        assert_eq!(sizes.iter().filter(|s| s.starts_with("svg ")).count(), charts, "{name}: {sizes:?}");
        assert!(sizes.iter().filter(|s| s.starts_with("circle ")).count() >= 9 * 5, "{name}: {sizes:?}");
        for s in &sizes {
            let (w, h) = s.split_once(' ').unwrap().1.split_once('x').unwrap();
            assert!(w.parse::<u32>().unwrap() > 0 && h.parse::<u32>().unwrap() > 0, "{name}: {s} is not drawn");
        }
    }
}

/// Every file below `dir` except those below the folders `keep`.
fn stray_files(dir: &Path, keep: &[&Path]) -> Vec<String> {
    files(dir).into_iter().filter(|f| !keep.iter().any(|k| dir.join(f).starts_with(k))).collect()
}

#[test]
fn markup_and_paths_in_hostile_evidence_stay_text_inside_the_site() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    golden_set::write(&out);
    let layout = xtask::evidence::Layout::new(camino::Utf8Path::from_path(&out).unwrap(), "x86_1");
    // Labels a hostile record may carry, and an evidence file named to end an attribute.
    for (file_label, label) in [("ML-KEM-512", "<script>alert(1)</script>"), ("ML-KEM-768", "../../x\"'><img src=x>")] {
        let path = layout.record(KEM, file_label, "keygen");
        let mut r: Record = schema::read(&path).unwrap().unwrap();
        r.label = label.into();
        schema::write(&path, &r).unwrap();
    }
    std::fs::write(layout.kat_dir(KEM).join("\"><script>alert(2)<\\script>.log"), "x").unwrap();
    xtask::evidence::write_index(&layout.out).unwrap();
    // A file the index does not list is still linked, below section 7.
    std::fs::write(layout.kat_dir(KEM).join("late.log"), "late").unwrap();
    let site = tmp.path().join("site");
    let o = xtask(&["site", out.to_str().unwrap(), "--out", site.to_str().unwrap()], None);
    assert!(o.status.success());
    for f in files(&site).into_iter().filter(|f| f.ends_with(".html")) {
        let html = std::fs::read_to_string(site.join(&f)).unwrap();
        assert!(!html.contains("<script") && !html.contains("<img") && !html.contains("'>"), "{f}");
    }
    let page = std::fs::read_to_string(site.join("x86_1/pqclean-ml-kem.html")).unwrap();
    assert!(page.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "the label is shown as text");
    assert!(page.contains("../../x&quot;&#39;&gt;&lt;img src=x&gt;"), "{page}");
    let link = "../raw/x86_1/kat/pqclean-ml-kem/%22%3E%3Cscript%3Ealert%282%29%3C%5Cscript%3E.log";
    assert!(page.contains(&format!("<a href=\"{link}\">")), "{page}");
    assert!(site
        .join("x86_1")
        .join(link.replace("%22%3E%3Cscript%3Ealert%282%29%3C%5Cscript%3E", "\"><script>alert(2)<\\script>"))
        .is_file());
    let late = "<p>Not in the evidence index:</p>\n<ul>\n<li><a href=\"../raw/x86_1/kat/pqclean-ml-kem/late.log\">";
    assert!(page.contains(late), "{page}");
    assert_eq!(stray_files(tmp.path(), &[&out, &site]), Vec::<String>::new(), "nothing written outside the site");
}

#[test]
fn a_site_inside_the_evidence_or_from_evidence_with_a_link_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    golden_set::write(&out);
    let out_s = out.to_str().unwrap();
    let one = tmp.path().join("one");
    golden_set::write_part(&one, &["x86_1"], &[KEM]);
    let o = xtask(&["site", one.to_str().unwrap(), "--out", tmp.path().join("one-site").to_str().unwrap()], None);
    assert!(common::stdout(&o).starts_with("site: 1 page in "), "one page, singular");
    for inside in [out.join("site"), out.join("x86_1/../site"), out.clone()] {
        let o = xtask(&["site", out_s, "--out", inside.to_str().unwrap()], None);
        assert_eq!(o.status.code(), Some(2), "a usage error");
        assert!(String::from_utf8_lossy(&o.stderr).contains("is inside the evidence set"));
    }
    assert!(!out.join("site").exists() && !out.join("index.html").exists(), "nothing written");
    assert!(xtask(&["evidence", "check", out_s], None).status.success());

    // A log replaced by a link to a file outside the set: refused, never read or copied.
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, "SECRET-OUTSIDE-THE-EVIDENCE").unwrap();
    let log = out.join("x86_1/kat/pqclean-ml-kem/ML-KEM-512.log");
    std::fs::remove_file(&log).unwrap();
    std::os::unix::fs::symlink(&secret, &log).unwrap();
    let site = tmp.path().join("site");
    let o = xtask(&["site", out_s, "--out", site.to_str().unwrap()], None);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("a link (links are never followed)"));
    assert!(!site.exists(), "nothing written");
}

#[test]
fn site_takes_a_manifest_by_path_as_report_does() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    golden_set::write_part(&out, &["x86_1"], &[KEM]);
    // The evidence of a draft whose manifest lies outside submissions/ (as onboard writes it).
    for kind in ["kat", "records", "profile", "ct"] {
        let dir = out.join("x86_1").join(kind);
        std::fs::rename(dir.join(KEM), dir.join("toykem")).unwrap();
    }
    xtask::evidence::write_index(camino::Utf8Path::from_path(&out).unwrap()).unwrap();
    let drafts = tmp.path().join("drafts");
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    std::fs::create_dir_all(drafts.join("toykem")).unwrap();
    let text = std::fs::read_to_string(checkout.join("submissions/pqclean-ml-kem.toml")).unwrap();
    let text = text
        .replace("id = \"pqclean-ml-kem\"", "id = \"toykem\"")
        .replace("name = \"ML-KEM (PQClean clean)\"", "name = \"Toy KEM\"");
    std::fs::write(drafts.join("toykem.toml"), text).unwrap();
    std::fs::copy(checkout.join("kat/pqclean-ml-kem/kat.sha256"), drafts.join("toykem/kat.sha256")).unwrap();
    let (out_s, site) = (out.to_str().unwrap(), tmp.path().join("site"));
    let o = xtask(&["site", out_s, "--out", site.to_str().unwrap()], None);
    assert!(common::stdout(&o).starts_with("site: 0 pages in "), "{}", common::stdout(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--manifest PATH"), "the way through is said");
    let manifest = drafts.join("toykem.toml");
    let o = xtask(&["site", out_s, "--out", site.to_str().unwrap(), "--manifest", manifest.to_str().unwrap()], None);
    assert!(
        o.status.success() && common::stdout(&o).starts_with("site: 1 page in "),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let page = std::fs::read_to_string(site.join("x86_1/toykem.html")).unwrap();
    assert!(page.contains("<h1>toykem Toy KEM — performance on x86-64 (system x86_1)</h1>"), "{page}");
    let o = xtask(&["site", out_s, "--out", site.to_str().unwrap(), "--manifest", "toykem"], None);
    assert_eq!(o.status.code(), Some(2), "a manifest is a path to a .toml file");
}
