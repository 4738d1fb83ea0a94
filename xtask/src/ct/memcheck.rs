//! Memcheck's XML report (protocol 4) as `ct` findings. The report is written by
//! valgrind in the sandbox, beside the candidate's code: everything in it is taken as
//! attacker-controlled text (bounded, well-formed or refused, never a path to open).

use std::collections::BTreeMap;

use crate::evidence::schema::{CtFinding, CtFrame, CtKind};

/// Most bytes of XML read; more is a failed run.
pub const MAX_XML: u64 = 64 << 20;
/// Frames kept of each stack.
const MAX_FRAMES: usize = 24;

/// What a report says.
#[derive(Debug, Default, PartialEq)]
pub struct Report {
    pub findings: Vec<CtFinding>,
    /// Client messages (the driver's `ngcc-ct ...` line).
    pub messages: Vec<String>,
    /// Valgrind wrote its final status (the run was not cut short).
    pub finished: bool,
}

/// Where the candidate's tree and the harness's drivers are in the sandbox.
pub struct Roots<'a> {
    pub src: &'a str,
    pub drivers: &'a str,
}

/// Parse a report; findings with the same kind and stack are one, with their counts.
pub fn parse(xml: &[u8], roots: &Roots) -> Result<Report, String> {
    let text = std::str::from_utf8(xml).map_err(|_| "memcheck's report is not UTF-8".to_owned())?;
    let opts = roxmltree::ParsingOptions { allow_dtd: false, nodes_limit: 4_000_000, ..Default::default() };
    let doc = roxmltree::Document::parse_with_options(text, opts)
        .map_err(|e| format!("memcheck's report is not well-formed XML ({e})"))?;
    let root = doc.root_element();
    if root.tag_name().name() != "valgrindoutput" || child_text(root, "protocoltool") != Some("memcheck") {
        return Err("the report is not memcheck's XML".into());
    }
    let counts = error_counts(root);
    let mut merged: BTreeMap<(CtKind, Vec<CtFrame>), CtFinding> = BTreeMap::new();
    let mut report = Report::default();
    for node in root.children().filter(|n| n.is_element()) {
        match node.tag_name().name() {
            // Memory still allocated at exit is no constant-time finding (XML mode
            // reports leaks whatever --leak-check says).
            "error" if child_text(node, "kind").is_some_and(|k| k.starts_with("Leak_")) => {}
            "error" => {
                let f = finding(node, roots, &counts)?;
                merged.entry((f.kind, f.stack.clone())).and_modify(|m| m.count += f.count).or_insert(f);
            }
            "clientmsg" => report.messages.push(child_text(node, "text").unwrap_or_default().trim().to_owned()),
            "status" => report.finished |= child_text(node, "state") == Some("FINISHED"),
            _ => {}
        }
    }
    report.findings = merged.into_values().collect();
    report.findings.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.at.cmp(&b.at)));
    Ok(report)
}

fn child<'a, 'i>(node: roxmltree::Node<'a, 'i>, name: &str) -> Option<roxmltree::Node<'a, 'i>> {
    node.children().find(|c| c.has_tag_name(name))
}

fn child_text<'a>(node: roxmltree::Node<'a, '_>, name: &str) -> Option<&'a str> {
    child(node, name).and_then(|c| c.text())
}

/// `<errorcounts><pair><count>N</count><unique>0x..</unique></pair>`: unique → count.
fn error_counts(root: roxmltree::Node) -> BTreeMap<String, u64> {
    let pairs = root.children().filter(|n| n.has_tag_name("errorcounts")).flat_map(|c| c.children());
    pairs
        .filter(|p| p.has_tag_name("pair"))
        .filter_map(|p| Some((child_text(p, "unique")?.to_owned(), child_text(p, "count")?.parse().ok()?)))
        .collect()
}

fn kind_of(kind: &str, what: &str) -> CtKind {
    match kind {
        _ if what.contains("Variable-latency") => CtKind::Division,
        "UninitCondition" => CtKind::Branch,
        "UninitValue" => CtKind::Index,
        "SyscallParam" => CtKind::Syscall,
        _ => CtKind::Other,
    }
}

fn finding(node: roxmltree::Node, roots: &Roots, counts: &BTreeMap<String, u64>) -> Result<CtFinding, String> {
    let kind = child_text(node, "kind").ok_or("an <error> without a <kind>")?;
    let what = child_text(node, "what")
        .or_else(|| child(node, "xwhat").and_then(|x| child_text(x, "text")))
        .unwrap_or_default()
        .to_owned();
    let stack: Vec<CtFrame> = child(node, "stack")
        .ok_or("an <error> without a <stack>")?
        .children()
        .filter(|f| f.has_tag_name("frame"))
        .take(MAX_FRAMES)
        .map(|f| frame(f, roots))
        .collect();
    let at = stack.iter().find(|f| is_candidate(f)).or(stack.first()).cloned().ok_or("an empty <stack>")?;
    let count = child_text(node, "unique").and_then(|u| counts.get(u)).copied().unwrap_or(1);
    Ok(CtFinding { kind: kind_of(kind, &what), at, stack, count, what: crate::project::printable(&what) })
}

/// A frame in the candidate's source tree (not the harness's, not a library without
/// debug information).
pub fn is_candidate(f: &CtFrame) -> bool {
    !f.file.is_empty() && !f.file.starts_with("driver:") && !f.file.starts_with('/')
}

/// A frame's place: relative to the source root, `driver:<file>`, or the object.
fn frame(f: roxmltree::Node, roots: &Roots) -> CtFrame {
    let text = |n| child_text(f, n).map(one_line).unwrap_or_default();
    let (dir, file) = (text("dir"), text("file"));
    let full = if file.is_empty() || file.starts_with('/') || dir.is_empty() { file } else { format!("{dir}/{file}") };
    let place = if let Some(rel) = full.strip_prefix(roots.src).and_then(|r| r.strip_prefix('/')) {
        rel.to_owned()
    } else if let Some(rel) = full.strip_prefix(roots.drivers).and_then(|r| r.strip_prefix('/')) {
        format!("driver:{rel}")
    } else if full.is_empty() {
        text("obj")
    } else {
        full
    };
    let function = text("fn");
    CtFrame {
        function: if function.is_empty() { text("ip") } else { function },
        file: place,
        line: child_text(f, "line").and_then(|l| l.parse().ok()).unwrap_or(0),
    }
}

/// A name or path from the report on one printable line.
fn one_line(text: &str) -> String {
    crate::project::printable(text).replace(['\n', '\t'], " ").trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOTS: Roots = Roots { src: "/src", drivers: "/drivers" };

    fn frame_xml(func: &str, dir: &str, file: &str, line: u32) -> String {
        format!("<frame><ip>0x1</ip><obj>/build/libinstance.so</obj><fn>{func}</fn><dir>{dir}</dir><file>{file}</file><line>{line}</line></frame>")
    }

    fn error_xml(unique: &str, kind: &str, what: &str, frames: &[String]) -> String {
        format!("<error><unique>{unique}</unique><tid>1</tid><kind>{kind}</kind><what>{what}</what><stack>{}</stack></error>", frames.concat())
    }

    fn doc(body: &str) -> String {
        format!("<?xml version=\"1.0\"?>\n<valgrindoutput><protocolversion>4</protocolversion><protocoltool>memcheck</protocoltool><status><state>RUNNING</state></status>{body}<status><state>FINISHED</state></status></valgrindoutput>")
    }

    #[test]
    fn findings_name_the_candidates_line_and_merge_with_their_counts() {
        let leak = frame_xml("lookup", "/src/ref", "table.c", 12);
        let caller = frame_xml("main", "/drivers", "kem_ct.c", 80);
        let libc = "<frame><ip>0x2</ip><obj>/usr/lib/x86_64-linux-gnu/libc.so.6</obj></frame>".to_owned();
        let body = [
            error_xml("0x0", "UninitValue", "Use of uninitialised value of size 8", &[leak.clone(), caller.clone()]),
            error_xml("0x1", "UninitCondition", "Conditional jump or move depends on uninitialised value(s)", &[libc, leak.clone(), caller.clone()]),
            "<clientmsg><tid>1</tid><text>ngcc-ct op=dec runs=2 secret_bytes=64 random_bytes=0\n</text></clientmsg>".into(),
            error_xml("0x2", "Leak_DefinitelyLost", "8 bytes in 1 blocks are definitely lost", std::slice::from_ref(&caller)),
            "<errorcounts><pair><count>5</count><unique>0x0</unique></pair><pair><count>2</count><unique>0x1</unique></pair></errorcounts>".into(),
        ];
        let r = parse(doc(&body.concat()).as_bytes(), &ROOTS).unwrap();
        assert!(r.finished);
        assert_eq!(r.messages, ["ngcc-ct op=dec runs=2 secret_bytes=64 random_bytes=0"]);
        assert_eq!(r.findings.len(), 2);
        let (index, branch) = (&r.findings[0], &r.findings[1]);
        assert_eq!((index.kind, index.count, branch.kind, branch.count), (CtKind::Index, 5, CtKind::Branch, 2));
        // The innermost frame of the candidate's tree, past libc's; relative paths only.
        assert_eq!(branch.at, CtFrame { function: "lookup".into(), file: "ref/table.c".into(), line: 12 });
        assert_eq!(branch.stack[0].file, "/usr/lib/x86_64-linux-gnu/libc.so.6");
        assert_eq!(branch.stack[2].file, "driver:kem_ct.c");
    }

    #[test]
    fn hostile_reports_are_refused_not_half_read() {
        // Unclosed, a DTD (entity expansion), another tool, not UTF-8, an error with no stack.
        assert!(parse(b"<valgrindoutput><protocoltool>memcheck</protocoltool><error>", &ROOTS).is_err());
        let dtd = "<?xml version=\"1.0\"?><!DOCTYPE v [<!ENTITY a \"aaaa\">]><valgrindoutput/>";
        assert!(parse(dtd.as_bytes(), &ROOTS).unwrap_err().contains("well-formed"));
        let other = "<valgrindoutput><protocoltool>helgrind</protocoltool></valgrindoutput>";
        assert!(parse(other.as_bytes(), &ROOTS).is_err());
        assert!(parse(b"\xff\xfe", &ROOTS).is_err());
        let bare = doc("<error><unique>0x0</unique><kind>UninitValue</kind></error>");
        assert!(parse(bare.as_bytes(), &ROOTS).unwrap_err().contains("stack"));
        // A report cut short has no final status: it parses, and says so.
        let cut = "<valgrindoutput><protocoltool>memcheck</protocoltool></valgrindoutput>";
        assert!(!parse(cut.as_bytes(), &ROOTS).unwrap().finished);
        // Control characters in names are made printable; a path outside the roots stays as it is.
        let odd = doc(&error_xml("0x0", "UninitValue", "x", &[frame_xml("f&#x9b;2J&#10;g", "/elsewhere", "a.c", 3)]));
        let f = &parse(odd.as_bytes(), &ROOTS).unwrap().findings[0];
        assert!(
            !f.at.function.contains(['\u{9b}', '\n']) && f.at.file == "/elsewhere/a.c" && !is_candidate(&f.at),
            "{f:?}"
        );
    }
}
