//! From measurements to rows (medians, percentiles, ratios) and to the targets.

use crate::contender::{Contender, Kind};
use crate::run::Measurement;

/// One (contender, tasks) row.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub masters: usize,
    pub tasks: usize,
    pub kind: Kind,
    /// Cycles per second in each round.
    pub rates: Vec<f64>,
    /// The median of `rates`.
    pub rate: f64,
    /// Acquire latency percentiles over every round's samples, in microseconds.
    pub p50_us: f64,
    pub p99_us: f64,
    pub cycles: u64,
    pub errors: u64,
    pub first_error: Option<String>,
    /// Median over rounds of this row's rate over its floor's in the same round.
    pub vs_floor: Option<f64>,
    /// The same against rslock on as many nodes.
    pub vs_rslock: Option<f64>,
}

/// A target of the issue, checked on this run's rows.
#[derive(Clone, Debug)]
pub struct Target {
    pub what: String,
    pub measured: String,
    pub met: bool,
}

/// The median (the mean of the middle two for an even count); NaN when empty.
pub fn median(values: &[f64]) -> f64 {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| !x.is_nan()).collect();
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The nearest-rank percentile `p` (0-100) of sorted samples; NaN when empty.
pub fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1] as f64
}

/// Rows in the contenders' order, each concurrency level after the other.
pub fn summarize(contenders: &[Box<dyn Contender>], ms: &[Measurement]) -> Vec<Row> {
    let mut tasks: Vec<usize> = ms.iter().map(|m| m.tasks).collect();
    tasks.sort();
    tasks.dedup();
    let rounds = ms.iter().map(|m| m.round + 1).max().unwrap_or(0);
    // rate[c][t][round]
    let rate = |c: usize, t: usize, r: usize| {
        ms.iter()
            .find(|m| m.contender == c && m.tasks == t && m.round == r)
            .map(|m| m.rate())
    };
    let paired = |c: usize, other: Option<usize>, t: usize| -> Option<f64> {
        let o = other?;
        let ratios: Vec<f64> = (0..rounds)
            .filter_map(|r| Some(rate(c, t, r)? / rate(o, t, r)?))
            .collect();
        (!ratios.is_empty()).then(|| median(&ratios))
    };
    let find = |pred: &dyn Fn(&dyn Contender) -> bool| -> Option<usize> {
        contenders.iter().position(|c| pred(c.as_ref()))
    };
    let mut rows = Vec::new();
    for &t in &tasks {
        for (c, contender) in contenders.iter().enumerate() {
            let mine: Vec<&Measurement> = ms
                .iter()
                .filter(|m| m.contender == c && m.tasks == t)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let rates: Vec<f64> = mine.iter().map(|m| m.rate()).collect();
            let mut lat: Vec<u64> = mine.iter().flat_map(|m| m.acquire_ns.clone()).collect();
            lat.sort_unstable();
            let kind = contender.kind();
            let masters = contender.masters();
            let floor = match &kind {
                Kind::Locklab { floor } => find(&|o| o.name() == floor && o.masters() == masters),
                _ => None,
            };
            let rslock = match kind {
                Kind::Reference => None,
                _ => find(&|o| o.kind() == Kind::Reference && o.masters() == masters),
            };
            rows.push(Row {
                name: contender.name().to_string(),
                masters,
                tasks: t,
                rate: median(&rates),
                rates,
                p50_us: percentile(&lat, 50.0) / 1000.0,
                p99_us: percentile(&lat, 99.0) / 1000.0,
                cycles: mine.iter().map(|m| m.cycles).sum(),
                errors: mine.iter().map(|m| m.errors).sum(),
                first_error: mine.iter().find_map(|m| m.first_error.clone()),
                vs_floor: paired(c, floor, t),
                vs_rslock: paired(c, rslock, t),
                kind,
            });
        }
    }
    rows
}

/// The targets on these rows: single-node designs at ≥ 0.95× their floor;
/// with the most tasks, the designs that send rslock's commands ahead of it; Redlock on
/// 5 nodes with a median acquire latency ≤ 1.3× the single-node `lua-release`'s.
pub fn targets(rows: &[Row]) -> Vec<Target> {
    let mut out = Vec::new();
    let fmt = |x: Option<f64>| x.map_or("n/a".to_string(), |x| format!("{x:.3}×"));
    for r in rows {
        if let Kind::Locklab { floor } = &r.kind {
            if r.masters == 1 {
                out.push(Target {
                    what: format!("{} ({} task(s)) ≥ 0.95× {floor}", r.name, r.tasks),
                    measured: fmt(r.vs_floor),
                    met: r.vs_floor.is_some_and(|x| x >= 0.95),
                });
            }
        }
    }
    let most = rows.iter().map(|r| r.tasks).max().unwrap_or(0);
    for r in rows.iter().filter(|r| r.tasks == most && most > 1) {
        if let Kind::Locklab { floor } = &r.kind {
            if floor == "raw" && r.vs_rslock.is_some() {
                out.push(Target {
                    what: format!(
                        "{} on {} node(s), {most} tasks, ahead of rslock",
                        r.name, r.masters
                    ),
                    measured: fmt(r.vs_rslock),
                    met: r.vs_rslock.is_some_and(|x| x > 1.0),
                });
            }
        }
    }
    let locklab_p50 = |masters: usize, name: &str| {
        rows.iter()
            .find(|r| {
                r.tasks == 1
                    && r.masters == masters
                    && r.name == name
                    && matches!(r.kind, Kind::Locklab { .. })
            })
            .map(|r| r.p50_us)
    };
    if let (Some(five), Some(one)) = (locklab_p50(5, "redlock"), locklab_p50(1, "lua-release")) {
        let ratio = five / one;
        out.push(Target {
            what: "redlock on 5 nodes: p50 acquire ≤ 1.3× lua-release's (1 task)".into(),
            measured: format!("{five:.0} µs / {one:.0} µs = {ratio:.3}×"),
            met: ratio <= 1.3,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_and_percentiles() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
        let s: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&s, 50.0), 50.0);
        assert_eq!(percentile(&s, 99.0), 99.0);
        assert_eq!(percentile(&[7], 99.0), 7.0);
    }
}
