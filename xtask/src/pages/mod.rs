//! Pages from evidence alone: the Markdown report, the static site with its charts,
//! the cross-system comparison.

pub mod chart;
pub mod compare;
pub mod constant_time;
pub mod library;
pub mod report;
pub mod sanitizers;
pub mod site;

/// How every page writes its numbers: one rule per kind of figure, the seed pages'
/// forms (`3.03 M` cycles, `1.45 ms`, `690` ops/s, `1920 KiB`, `78%`). Pages and the
/// site call these and nothing else.
pub mod forms {
    use crate::measure::stats;

    /// Cycles or counter ticks: two decimals with a metric suffix from 1000 up
    /// (`107.10 k`, `3.03 M`, `1.07 G`), whole below.
    pub fn cycles(x: f64) -> String {
        stats::human_count(x)
    }

    /// A time in ns as three significant digits with its unit (`45 ms`, `18.2 µs`).
    pub fn time(ns: f64) -> String {
        stats::human_time(ns)
    }

    /// A rate or other plain figure: C's `%.3g` (`22.2`, `690`, `1.83e+03`).
    pub fn rate(v: f64) -> String {
        stats::three_digits(v)
    }

    /// A share: whole percent from 10 % up, one decimal below.
    pub fn percent(share: f64) -> String {
        stats::percent(share)
    }

    /// Cycles per byte: one decimal (`13.1`).
    pub fn per_byte(x: f64) -> String {
        format!("{x:.1}")
    }

    /// A ratio of two times: two decimals and `×` (`1.99 ×`).
    pub fn ratio(x: f64) -> String {
        format!("{x:.2} ×")
    }

    /// A memory figure in KiB (`1920 KiB`); a negative one was not read (`-`).
    pub fn kib(k: i64) -> String {
        if k >= 0 {
            format!("{k} KiB")
        } else {
            "-".into()
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn figures_take_the_seed_pages_forms() {
            assert_eq!(cycles(3.03e6), "3.03 M");
            assert_eq!(cycles(256.46e6), "256.46 M");
            assert_eq!(cycles(1.07e9), "1.07 G");
            assert_eq!(cycles(107_100.0), "107.10 k");
            assert_eq!(cycles(796.4), "796");
            assert_eq!(time(1.45e6), "1.45 ms");
            assert_eq!(rate(1830.0), "1.83e+03");
            assert_eq!(percent(0.78), "78%");
            assert_eq!((per_byte(13.14), ratio(1.994)), ("13.1".into(), "1.99 ×".into()));
            assert_eq!((kib(1920), kib(-1)), ("1920 KiB".into(), "-".into()));
        }
    }
}

/// What both the Markdown pages and the site escape text with: one rule each, below
/// every page module.
pub(crate) use crate::text::md;

pub(crate) fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;").replace('\'', "&#39;")
}
