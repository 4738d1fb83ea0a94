//! Key exchange: the length contract that runs beside the KAT digest, and the bandwidth
//! table of page §6. A pass that never sets the length of the message it sends leaves
//! whatever the caller preset: the official KAT driver's 0 (so the published text still
//! matches) or a timing harness's buffer capacity (a "phantom" message that inflates
//! its bandwidth). `drivers/kex_contract.c` runs each exchange twice from a seed drawn at
//! run time, with the lengths preset to 0 and to capacity; the tool judges it here.

use anyhow::Result;

use super::{CheckCtx as Ctx, Corroboration, Driver};
use crate::evidence::schema::{Check, CheckVerdict, Record};
use crate::project;

const DRIVER: Driver = Driver { source: "kex_contract.c", program: "kex_contract" };

pub const CONTRACT: Corroboration = Corroboration {
    driver: DRIVER,
    name: "length contract",
    failure_is_mismatch: false,
    on_mismatch: true,
    holds: "every pass set the length of the message it sent and both sides derived the same secret, with the \
            lengths preset to 0 and to the buffer capacity (seeds drawn at run time)",
    absent: "no length contract (the manifest gives no API to check it through)",
    run,
};

const RECORDS: usize = 3;
const SEED_BYTES: usize = 64;
const OUTPUT_CAP: u64 = 1 << 20;

fn run(ctx: &Ctx) -> Result<Check> {
    let nonce = project::hex(&project::random_bytes(16)?);
    let seeds: Vec<String> = (0..RECORDS)
        .map(|_| Ok(project::hex(&project::random_bytes(SEED_BYTES)?).to_ascii_uppercase()))
        .collect::<Result<_>>()?;
    let (verdict, detail) = ctx.judged(DRIVER, &nonce, &seeds, OUTPUT_CAP, |out| Ok(judge(&parse(out, &nonce)?)))?;
    Ok(Check { check: CONTRACT.name.into(), seeds, verdict, detail })
}

/// One record: the message buffers' capacity (the declared total), whether the secrets
/// agreed with each preset, and per pass the length returned with the preset 0 and with
/// the preset capacity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub capacity: u64,
    pub agree: [bool; 2],
    pub lengths: Vec<(u64, u64)>,
}

/// Exactly one line per record, `<nonce> <k> <passes> <total> <agree_0> <agree_cap> <pairs>`.
fn parse(out: &[u8], nonce: &str) -> std::result::Result<Vec<Row>, String> {
    let text = std::str::from_utf8(out).map_err(|_| "text that is not UTF-8".to_owned())?;
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() != RECORDS {
        return Err(format!("{} lines for {RECORDS} records", lines.len()));
    }
    lines.iter().enumerate().map(|(k, line)| parse_line(line, nonce, k)).collect()
}

fn parse_line(line: &str, nonce: &str, k: usize) -> std::result::Result<Row, String> {
    let bad = || format!("line {k} that is not `<nonce> {k} <passes> <total> <agree> <agree> <lengths>`");
    let f: Vec<&str> = line.split(' ').collect();
    let nums: Option<Vec<u64>> = f.iter().skip(1).map(|x| x.parse().ok()).collect();
    let n = nums.ok_or_else(bad)?;
    let passes = *n.get(1).ok_or_else(bad)? as usize;
    let flags_ok = n.len() >= 5 && n[3] <= 1 && n[4] <= 1;
    if f[0] != nonce || n[0] != k as u64 || !flags_ok || passes > 8 || n.len() != 5 + 2 * passes {
        return Err(bad());
    }
    let lengths = n[5..].chunks(2).map(|c| (c[0], c[1])).collect();
    Ok(Row { capacity: n[2], agree: [n[3] == 1, n[4] == 1], lengths })
}

/// An unset length outweighs a length that depends on the preset; disagreeing secrets
/// are named too.
pub fn judge(rows: &[Row]) -> (CheckVerdict, String) {
    let mut breaches = Vec::new();
    for (k, row) in rows.iter().enumerate() {
        for (j, &(zero, cap)) in row.lengths.iter().enumerate() {
            let pass = j + 1;
            if zero == cap {
                continue;
            }
            let line = if zero == 0 && cap == row.capacity {
                format!(
                    "record {k}: pass {pass} never set the length of its message: the preset stayed (0, or {cap} \
                     with a capacity preset, a phantom message a harness presetting capacity counts as bandwidth)"
                )
            } else {
                format!("record {k}: message {pass} is {zero} bytes with the length preset to 0 and {cap} with it preset to capacity")
            };
            breaches.push(line);
        }
        for (preset, agreed) in ["0", "capacity"].iter().zip(row.agree) {
            if !agreed {
                breaches
                    .push(format!("record {k}: the two sides derived different secrets (lengths preset to {preset})"));
            }
        }
    }
    match breaches.first() {
        Some(first) => (CheckVerdict::Breach, format!("{first}; {} findings", breaches.len())),
        None => (CheckVerdict::Holds, format!("{} records: {}", rows.len(), CONTRACT.holds)),
    }
}

/// Page §6 of a key exchange: passes, the messages as the API returned them, public
/// keys, bandwidth, the long-term secret key's API capacity and the shared secret.
pub fn bandwidth(records: &[&Record]) -> String {
    let mut w = String::from(
        "\nBandwidth, from one exchange on the reference seed (messages as the API returned them, lengths preset to 0; \
         a pass that never set its length is marked and counted as 0):\n\n\
         | instance | passes | messages (bytes; raw API) | protocol-message bytes | public key A / B | bandwidth (bytes) \
         | long-term sk (API cap) | shared secret |\n|---|---|---|---|---|---|---|---|\n",
    );
    for r in records {
        let (api, got) = (&r.sizes.api, &r.sizes.returned);
        let passes = api.get("passes");
        let unset = got.get("unset");
        let msgs: Vec<String> = (1..=passes)
            .map(|k| {
                let mark = if unset >> (k - 1) & 1 == 1 { " (never set)" } else { "" };
                format!("{}{mark}", got.get(&format!("m{k}")))
            })
            .collect();
        let protocol = got.get("msgs");
        let (pka, pkb) = (got.get("pk"), got.get("pkb"));
        w.push_str(&format!(
            "| {} | {passes} | {} | {protocol} | {pka} / {pkb} | {} | {} | {} |\n",
            crate::text::md(&r.label),
            if msgs.is_empty() { "none".to_owned() } else { msgs.join(" / ") },
            protocol + pka + pkb,
            api.get("sk"),
            got.get("ss")
        ));
    }
    w
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(nonce: &str, k: usize, agree: [u8; 2], pairs: &[(u64, u64)]) -> String {
        let p: String = pairs.iter().map(|(a, b)| format!(" {a} {b}")).collect();
        let total: u64 = pairs.iter().map(|(a, _)| a).sum::<u64>().max(pairs.iter().map(|p| p.1).max().unwrap_or(0));
        format!("{nonce} {k} {} {total} {} {}{p}\n", pairs.len(), agree[0], agree[1])
    }

    fn text(nonce: &str, agree: [u8; 2], pairs: &[(u64, u64)]) -> Vec<u8> {
        (0..RECORDS).map(|k| line(nonce, k, agree, pairs)).collect::<String>().into_bytes()
    }

    #[test]
    fn the_contract_is_judged_by_the_tool() {
        let good = parse(&text("ab", [1, 1], &[(32, 32), (40, 40)]), "ab").unwrap();
        assert_eq!(judge(&good).0, CheckVerdict::Holds);
        // As NGCC kex-02: pass 4 sends nothing and never sets its length.
        let unset = parse(&text("ab", [1, 1], &[(768, 768), (784, 784), (16, 16), (0, 1568)]), "ab").unwrap();
        let (v, why) = judge(&unset);
        assert_eq!(v, CheckVerdict::Breach);
        assert!(why.starts_with("record 0: pass 4 never set the length"), "{why}");
        let preset = parse(&text("ab", [1, 1], &[(32, 40)]), "ab").unwrap();
        assert!(judge(&preset).1.contains("message 1 is 32 bytes"), "depends on the preset");
        let differ = parse(&text("ab", [1, 0], &[(32, 32)]), "ab").unwrap();
        let (v, why) = judge(&differ);
        assert_eq!(v, CheckVerdict::Breach);
        assert!(why.contains("different secrets (lengths preset to capacity)"), "{why}");
        assert_eq!(judge(&parse(&text("ab", [1, 1], &[]), "ab").unwrap()).0, CheckVerdict::Holds, "0 passes");
    }

    #[test]
    fn only_the_programs_own_lines_count() {
        assert!(parse(&text("00", [1, 1], &[(1, 1)]), "ab").is_err(), "another nonce");
        let mut t = text("ab", [1, 1], &[(1, 1)]);
        t.extend_from_slice(line("ab", 3, [1, 1], &[(1, 1)]).as_bytes());
        assert!(parse(&t, "ab").is_err(), "an extra record");
        assert!(parse(b"ab 0 1 5 1 1 5\nab 1 1 5 1 1 5 5\nab 2 1 5 1 1 5 5\n", "ab").is_err(), "a missing length");
        assert!(parse(b"ab 0 0 0 2 1\nab 1 0 0 1 1\nab 2 0 0 1 1\n", "ab").is_err(), "a flag that is not 0 or 1");
        assert!(parse(&text("ab", [1, 1], &[(1, 1); 9]), "ab").is_err(), "more than 8 passes");
    }
}
