//! Partial overload: 2000 clients call a backend that serves 2000 attempts/s, where rejecting an
//! attempt costs a tenth of serving one. They offer 0.8× its capacity for 10 s, 3× for 60 s, then
//! 0.8× again. Seven ways of calling it, each decision made by the runtime itself (`decide` with a
//! real `Engine`, `RetryBudget`, `CircuitBreaker`, `AdaptiveThrottle` and `Bulkhead`) on a paused
//! tokio clock, on the same seed.
//!
//! ```text
//! cargo run -p reattempt-bench --release --example overload      # writes docs/overload.csv and docs/overload.svg
//! cargo run -p reattempt-bench --release --example overload -- --reject-cost 0.05   # another scenario; writes nothing
//! ```
//!
//! The model is `reattempt_bench::sim::overload` (`bench/src/sim/overload.rs`); BENCHMARKS.md
//! discusses the results.

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use plotters::prelude::SeriesLabelPosition;
use reattempt_bench::sim::chart;
use reattempt_bench::sim::overload::{self, Scenario, Strategy, Summary, Trace};

struct Args {
    scenario: Scenario,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let default = Scenario::standard();
    let mut s = default;
    let mut out = None;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--clients" => s.clients = value()?.parse()?,
            "--capacity" => s.capacity = value()?.parse()?,
            "--reject-cost" => s.reject_cost = value()?.parse()?,
            "--overload" => s.overload = value()?.parse()?,
            "--seed" => s.seed = value()?.parse()?,
            "--throttle-window" => s.throttle_window = Duration::from_secs(value()?.parse()?),
            "--throttle-requests" => s.throttle_window_requests = value()?.parse()?,
            "--out" => out = Some(PathBuf::from(value()?)),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; expected --clients N, --capacity N, --reject-cost X, --overload X, --seed N, --throttle-window SECS, --throttle-requests N, --out DIR"
                )
                .into());
            }
        }
    }
    if s.clients == 0 || s.capacity == 0 {
        return Err("--clients and --capacity must be at least 1".into());
    }
    if !(0.0..=1.0).contains(&s.reject_cost) {
        return Err("--reject-cost must be between 0 and 1".into());
    }
    if s.throttle_window < Duration::from_secs(1) {
        return Err("--throttle-window must be at least 1 (seconds)".into());
    }
    if s.throttle_window_requests == 0 {
        return Err("--throttle-requests must be at least 1".into());
    }
    if !(s.overload.is_finite() && s.overload > 0.0) {
        return Err("--overload must be a positive number".into());
    }
    #[allow(clippy::float_cmp, reason = "unchanged defaults")]
    let is_default = s.clients == default.clients
        && s.capacity == default.capacity
        && s.reject_cost == default.reject_cost
        && s.overload == default.overload
        && s.throttle_window == default.throttle_window
        && s.throttle_window_requests == default.throttle_window_requests
        && s.seed == default.seed;
    if out.is_none() && is_default {
        out = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs"));
    }
    Ok(Args { scenario: s, out })
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let s = args.scenario;
    let started = std::time::Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let traces: Vec<Trace> = runtime.block_on(async {
        let mut traces = Vec::new();
        for strategy in Strategy::ALL {
            traces.push(overload::simulate(&s, strategy).await);
        }
        traces
    });
    let elapsed = started.elapsed();

    println!(
        "{} clients; capacity {}/s, a rejection costs {} of a request; offered {}× capacity, \
         {}× from {:?} to {:?}; retries: {} attempts, 100 ms ×2 up to 2 s, full jitter; seed {}",
        s.clients,
        s.capacity,
        s.reject_cost,
        s.normal,
        s.overload,
        s.overload_start,
        s.overload_end(),
        reattempt_bench::sim::storm::MAX_ATTEMPTS,
        s.seed
    );
    println!(
        "\n{:<28} {:>9} {:>9} {:>10} {:>9} {:>9} {:>8} {:>8} {:>9} {:>8}",
        "strategy",
        "goodput",
        "gp.steady",
        "arrivals/s",
        "arr÷acc",
        "a÷a.stdy",
        "local/s",
        "ok.dur",
        "recovery",
        "ok.aft"
    );
    for t in &traces {
        let m = Summary::of(&s, t);
        println!(
            "{:<28} {:>8.1}% {:>8.1}% {:>10.0} {:>9.2} {:>9.2} {:>8.0} {:>7.1}% {:>9} {:>7.1}%",
            t.strategy.label(),
            m.goodput * 100.0,
            m.goodput_steady * 100.0,
            m.arrivals,
            m.arrivals_per_accept,
            m.arrivals_per_accept_steady,
            m.local,
            m.ok_during * 100.0,
            m.recovery.map_or_else(
                || "never".to_owned(),
                |d| format!("{:.0} s", d.as_secs_f64())
            ),
            m.ok_after * 100.0
        );
    }
    println!(
        "\ngoodput: attempts served per second during the overload ÷ capacity; arrivals/s: \
         attempts reaching the backend per second during it; arr÷acc: arrivals ÷ served; gp.steady, a÷a.stdy: the same without the overload's first \
         10 s; local/s: \
         attempts a client guard turned away per second during it; ok.dur: calls started during it \
         that succeeded; recovery: from the overload's end to the end of the last second whose \
         calls failed more than 1 % (\"never\": still failing at the end); ok.aft: calls started \
         in the 10 s after it that succeeded."
    );
    println!("simulated in {:.1} s", elapsed.as_secs_f64());

    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)?;
        write_csv(&out.join("overload.csv"), &traces)?;
        plot(&out.join("overload.svg"), &s, &traces)?;
        println!("wrote {}/overload.csv and overload.svg", out.display());
    } else {
        println!("(not the default scenario: no files written; pass --out DIR to write them)");
    }
    Ok(())
}

fn per_s(n: u32) -> f64 {
    f64::from(n) / overload::BIN.as_secs_f64()
}

fn write_csv(path: &Path, traces: &[Trace]) -> Result<(), Box<dyn Error>> {
    let mut csv =
        String::from("strategy,t_s,arrivals_per_s,served_per_s,rejected_per_s,local_per_s\n");
    for t in traces {
        for (i, b) in t.bins.iter().enumerate() {
            let at = overload::BIN * u32::try_from(i)?;
            writeln!(
                csv,
                "{},{:.1},{:.0},{:.0},{:.0},{:.0}",
                t.strategy.label(),
                at.as_secs_f64(),
                per_s(b.arrivals),
                per_s(b.served),
                per_s(b.rejected),
                per_s(b.local)
            )?;
        }
    }
    std::fs::write(path, csv)?;
    Ok(())
}

/// Served attempts per second (goodput), in 1 s bins so the lines stay readable.
fn plot(path: &Path, s: &Scenario, traces: &[Trace]) -> Result<(), Box<dyn Error>> {
    let x_end = (s.overload_end() + Duration::from_secs(60)).as_secs_f64();
    let per_bin = usize::try_from(Duration::from_secs(1).as_nanos() / overload::BIN.as_nanos())?;
    let series: Vec<chart::Series> = traces
        .iter()
        .zip(chart::PALETTE)
        .map(|(t, color)| chart::Series {
            name: t.strategy.label().to_owned(),
            color,
            points: t
                .bins
                .chunks(per_bin)
                .enumerate()
                .map(|(i, bins)| {
                    #[allow(clippy::cast_precision_loss, reason = "a few hundred seconds")]
                    let x = i as f64 + 0.5;
                    (x, f64::from(bins.iter().map(|b| b.served).sum::<u32>()))
                })
                .take_while(|p| p.0 <= x_end)
                .collect(),
        })
        .collect();
    // Room above the capacity line for the legend (the lines stay below it).
    let top = f64::from(s.capacity) * 1.6;
    let title = format!(
        "Attempts served per second ({} clients; 1 s bins; rejection costs {} of a request)",
        s.clients, s.reject_cost
    );
    let capacity = format!("capacity ({}/s)", s.capacity);
    let shade = format!("offered {}× capacity", s.overload);
    chart::draw(
        path,
        &chart::Chart {
            title: &title,
            x_label: "time (s)",
            y_label: "served per second",
            x_range: 0.0..x_end,
            y_range: 0.0..top,
            shade: Some((
                s.overload_start.as_secs_f64()..s.overload_end().as_secs_f64(),
                &shade,
            )),
            reference: Some((f64::from(s.capacity), &capacity)),
            legend_at: SeriesLabelPosition::UpperRight,
            log_y: false,
        },
        &series,
    )
}
