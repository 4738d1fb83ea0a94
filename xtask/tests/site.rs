//! `cargo xtask site` on a real evidence set with two systems: pages for both with the
//! breadcrumb linking them, charts beside their tables, byte-identical output for the
//! same evidence, and charts that a browser (headless Chromium, installed by .ci/run)
//! draws with non-zero size. The site has no scripts: the test adds its own probe to
//! a copy of a page to read the drawn sizes back.

mod common;

use std::path::Path;
use std::process::Command;

use common::xtask;

fn chromium(args: &[&str], profile: &Path) -> std::process::Output {
    let mut cmd = Command::new("chromium");
    cmd.args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]);
    cmd.args(["--disable-background-networking", "--disable-component-update", "--disable-sync"]);
    cmd.arg(format!("--user-data-dir={}", profile.display())).args(args);
    cmd.output().expect("chromium (Debian package chromium, installed by .ci/run)")
}

#[test]
fn site_renders_every_system_deterministically_with_visible_charts() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("out");
    let out_s = out.to_str().unwrap();
    let campaign = ["campaign", "pqclean-ml-kem", "pqclean-hqc", "--engine", "podman", "--quick", "--no-profile"];
    assert!(xtask(&[&campaign[..], &["--allow-unfixed-host", "--out", out_s]].concat(), None).status.success());
    // A second system: the same evidence under another name is enough for the links.
    let copy = Command::new("cp").arg("-r").arg(out.join("local")).arg(out.join("x86_1")).status().unwrap();
    assert!(copy.success());
    assert!(xtask(&["evidence", "index", out_s], None).status.success());

    let (s1, s2) = (tmp.path().join("site1"), tmp.path().join("site2"));
    for s in [&s1, &s2] {
        assert!(xtask(&["site", out_s, "--out", s.to_str().unwrap()], None).status.success());
    }
    for f in ["index.html", "local/pqclean-ml-kem.html", "x86_1/pqclean-hqc.html", "x86_1/pqclean-ml-kem.md"] {
        assert_eq!(std::fs::read(s1.join(f)).unwrap(), std::fs::read(s2.join(f)).unwrap(), "{f} differs");
    }
    assert!(xtask(&["evidence", "check", out_s], None).status.success(), "the site leaves the evidence alone");
    let index = std::fs::read_to_string(s1.join("index.html")).unwrap();
    for link in ["x86_1/pqclean-ml-kem.html", "local/pqclean-ml-kem.html", "x86_1/pqclean-hqc.html"] {
        assert!(index.contains(&format!("href=\"{link}\"")), "{link}: {index}");
    }
    let page = std::fs::read_to_string(s1.join("local/pqclean-ml-kem.html")).unwrap();
    assert!(page.contains("› local › pqclean-ml-kem · system: <strong>local</strong> <a href=\"../x86_1/pqclean-ml-kem.html\">x86_1</a>"), "{page}");
    assert!(page.contains("<figcaption>Figure 1.") && page.contains("<figcaption>Figure 2."));
    assert!(page.contains("<td>ML-KEM-512</td><td>keygen</td>"), "the tables stay beside the charts");
    assert!(page.contains("Parameter sets measured: ML-KEM-512, ML-KEM-768, ML-KEM-1024"), "{page}");
    assert!(!page.contains("<script"), "the site needs no scripts");
    assert!(!page.contains(tmp.path().to_str().unwrap()), "no path of the machine that ran it");

    // The browser's view: screenshots, and the drawn size of every chart and bar.
    let profile = tmp.path().join("chromium-profile");
    for (name, file) in [("index.png", "index.html"), ("page.png", "local/pqclean-ml-kem.html")] {
        let shot = tmp.path().join(name);
        let url = format!("file://{}", s1.join(file).display());
        let o = chromium(&["--window-size=1000,2400", &format!("--screenshot={}", shot.display()), &url], &profile);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert!(std::fs::metadata(&shot).unwrap().len() > 10_000, "{name} is blank");
    }
    let probe = "<script>window.onload=()=>{const r=[...document.querySelectorAll('svg, svg rect, svg circle')]\
                 .map(e=>{const b=e.getBoundingClientRect();return e.tagName+' '+Math.round(b.width)+'x'+Math.round(b.height)});\
                 const p=document.createElement('pre');p.id='probe';p.textContent=r.join('\\n');document.body.appendChild(p);}</script>";
    let probed = tmp.path().join("probed.html");
    std::fs::write(&probed, page.replace("</body>", &format!("{probe}</body>"))).unwrap();
    let o = chromium(&["--dump-dom", &format!("file://{}", probed.display())], &profile);
    let dom = String::from_utf8_lossy(&o.stdout);
    let sizes: Vec<&str> =
        dom.split("<pre id=\"probe\">").nth(1).unwrap().split("</pre>").next().unwrap().lines().collect();
    assert_eq!(sizes.iter().filter(|s| s.starts_with("svg ")).count(), 2, "{sizes:?}");
    assert!(sizes.iter().filter(|s| s.starts_with("rect ")).count() >= 3, "{sizes:?}");
    for s in &sizes {
        let (w, h) = s.split_once(' ').unwrap().1.split_once('x').unwrap();
        assert!(w.parse::<u32>().unwrap() > 0 && h.parse::<u32>().unwrap() > 0, "{s} is not drawn");
    }
}
