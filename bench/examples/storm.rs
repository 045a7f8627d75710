//! A retry storm: 1000 clients call a dependency that serves 1500 attempts/s, is fully down from
//! t = 10 s to t = 20 s, then recovers. Five ways of calling it, each decision made by the
//! runtime itself (`decide` with a real `Engine`, `RetryBudget` and `CircuitBreaker`) on a paused
//! tokio clock.
//!
//! ```text
//! cargo run -p reattempt-bench --release --example storm          # writes docs/storm.csv and docs/storm.svg
//! cargo run -p reattempt-bench --example storm -- --clients 200 --capacity 300   # another scenario; writes nothing
//! ```
//!
//! The model is `reattempt_bench::sim::storm` (`bench/src/sim/storm.rs`); BENCHMARKS.md
//! discusses the results.

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use plotters::prelude::SeriesLabelPosition;
use reattempt_bench::sim::chart;
use reattempt_bench::sim::storm::{self, Scenario, Strategy, Summary, Trace};

struct Args {
    scenario: Scenario,
    runs: u64,
    out: Option<PathBuf>,
}

fn parse_args() -> Result<Args, Box<dyn Error>> {
    let default = Scenario {
        clients: 1000,
        call_interval: Duration::from_secs(1),
        capacity: 1500,
        outage_start: Duration::from_secs(10),
        outage: Duration::from_secs(10),
        end: Duration::from_secs(40),
        seed: 2016,
    };
    let mut s = default;
    let mut out = None;
    let mut runs = 10;
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--clients" => s.clients = value()?.parse()?,
            "--capacity" => s.capacity = value()?.parse()?,
            "--outage-secs" => s.outage = Duration::from_secs(value()?.parse()?),
            "--seed" => s.seed = value()?.parse()?,
            "--runs" => runs = value()?.parse()?,
            "--out" => out = Some(PathBuf::from(value()?)),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; expected --clients N, --capacity N, --outage-secs N, --seed N, --runs N, --out DIR"
                )
                .into());
            }
        }
    }
    if s.clients == 0 || s.capacity == 0 || runs == 0 {
        return Err("--clients, --capacity and --runs must be at least 1".into());
    }
    s.end = s.end.max(s.recovery() + Duration::from_secs(20));
    let is_default = s.clients == default.clients
        && s.capacity == default.capacity
        && s.outage == default.outage
        && s.seed == default.seed
        && runs == 10;
    if out.is_none() && is_default {
        out = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs"));
    }
    Ok(Args {
        scenario: s,
        runs,
        out,
    })
}

/// One strategy's runs: per-bin means (per second) and the mean summary.
struct Averaged {
    strategy: Strategy,
    /// attempts, ok, shed, breaker-rejected; per second, mean over runs.
    bins: Vec<[f64; 4]>,
    summary: Summary,
}

fn average(s: &Scenario, traces: &[Trace]) -> Averaged {
    let per_s = 1.0 / storm::BIN.as_secs_f64();
    #[allow(clippy::cast_precision_loss, reason = "a handful of runs")]
    let n = traces.len() as f64;
    let mut bins = vec![[0.0; 4]; traces[0].bins.len()];
    for t in traces {
        for (sum, b) in bins.iter_mut().zip(&t.bins) {
            for (x, v) in sum.iter_mut().zip([b.attempts, b.ok, b.shed, b.rejected]) {
                *x += f64::from(v) * per_s / n;
            }
        }
    }
    let summaries: Vec<Summary> = traces.iter().map(|t| Summary::of(s, t)).collect();
    Averaged {
        strategy: traces[0].strategy,
        bins,
        summary: Summary::mean(&summaries),
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let args = parse_args()?;
    let s = args.scenario;
    let started = std::time::Instant::now();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()?;
    let results: Vec<Averaged> = runtime.block_on(async {
        let mut results = Vec::new();
        for strategy in Strategy::ALL {
            let mut traces = Vec::new();
            for run in 0..args.runs {
                let scenario = Scenario {
                    seed: s.seed.wrapping_add(run),
                    ..s
                };
                traces.push(storm::simulate(&scenario, strategy).await);
            }
            results.push(average(&s, &traces));
        }
        results
    });
    let elapsed = started.elapsed();

    println!(
        "{} clients, one call per {:?} each on average; capacity {}/s; down from {:?} to {:?}; \
         retries: {} attempts, 100 ms ×2 up to 2 s; mean of {} runs",
        s.clients,
        s.call_interval,
        s.capacity,
        s.outage_start,
        s.recovery(),
        storm::MAX_ATTEMPTS,
        args.runs
    );
    println!(
        "\n{:<30} {:>8} {:>8} {:>7} {:>9} {:>8} {:>7} {:>7} {:>7} {:>8} {:>8}",
        "strategy",
        "before/s",
        "during/s",
        "ampl.",
        "att/call",
        "peak/s",
        "pk÷mean",
        "pk÷norm",
        "drain",
        "fail.dur",
        "fail.aft"
    );
    for r in &results {
        let m = &r.summary;
        println!(
            "{:<30} {:>8.0} {:>8.0} {:>6.2}× {:>9.2} {:>8.0} {:>7.2} {:>7.2} {:>6.2}s {:>7.1}% {:>7.1}%",
            r.strategy.label(),
            m.before,
            m.during,
            m.amplification,
            m.attempts_per_call,
            m.peak_after,
            m.peak_after / m.mean_after,
            m.peak_after / m.before,
            m.drain.as_secs_f64(),
            m.failed_during * 100.0,
            m.failed_after * 100.0
        );
    }
    println!(
        "\nbefore/during: attempts/s reaching the dependency before (2–10 s) and during the outage; \
         ampl.: attempts during the outage ÷ calls started during it; att/call: attempts per call \
         started during the outage; peak/s: highest {} ms bin in the 10 s after recovery, ÷ the mean \
         of those 10 s and ÷ the rate before; drain: recovery until the last attempt of an \
         outage-era call or the last attempt shed for capacity; fail.dur/fail.aft: calls that failed, \
         of those started during the outage / in the 10 s after it.",
        storm::BIN.as_millis()
    );
    println!("simulated in {:.1} s", elapsed.as_secs_f64());

    if let Some(out) = &args.out {
        std::fs::create_dir_all(out)?;
        write_csv(&out.join("storm.csv"), &results)?;
        plot(&out.join("storm.svg"), &s, args.runs, &results)?;
        println!("wrote {}/storm.csv and storm.svg", out.display());
    } else {
        println!("(not the default scenario: no files written; pass --out DIR to write them)");
    }
    Ok(())
}

fn write_csv(path: &Path, results: &[Averaged]) -> Result<(), Box<dyn Error>> {
    let mut csv =
        String::from("strategy,t_s,attempts_per_s,ok_per_s,shed_per_s,breaker_rejected_per_s\n");
    for r in results {
        for (i, b) in r.bins.iter().enumerate() {
            let at = storm::BIN * u32::try_from(i)?;
            writeln!(
                csv,
                "{},{:.1},{:.1},{:.1},{:.1},{:.1}",
                r.strategy.label(),
                at.as_secs_f64(),
                b[0],
                b[1],
                b[2],
                b[3]
            )?;
        }
    }
    std::fs::write(path, csv)?;
    Ok(())
}

fn plot(path: &Path, s: &Scenario, runs: u64, results: &[Averaged]) -> Result<(), Box<dyn Error>> {
    let x_end = (s.recovery() + Duration::from_secs(10)).as_secs_f64();
    let series: Vec<chart::Series> = results
        .iter()
        .zip(chart::PALETTE)
        .map(|(r, color)| chart::Series {
            name: r.strategy.label().to_owned(),
            color,
            points: r
                .bins
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    #[allow(clippy::cast_precision_loss, reason = "a few hundred bins")]
                    let x = (i as f64 + 0.5) * storm::BIN.as_secs_f64();
                    (x, b[0])
                })
                .take_while(|p| p.0 <= x_end)
                .collect(),
        })
        .collect();
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(f64::from(s.capacity), f64::max)
        * 1.1;
    let title = format!(
        "Attempts reaching the dependency ({} clients; {} ms bins, mean of {runs} runs)",
        s.clients,
        storm::BIN.as_millis()
    );
    let capacity = format!("capacity ({}/s)", s.capacity);
    chart::draw(
        path,
        &chart::Chart {
            title: &title,
            x_label: "time (s)",
            y_label: "attempts per second",
            x_range: 0.0..x_end,
            y_range: 0.0..top,
            shade: Some((
                s.outage_start.as_secs_f64()..s.recovery().as_secs_f64(),
                "dependency down",
            )),
            reference: Some((f64::from(s.capacity), &capacity)),
            legend_at: SeriesLabelPosition::UpperRight,
            log_y: false,
        },
        &series,
    )
}
