//! Hedging, simulated: 10 replicas, each one server with a FIFO queue; service times lognormal
//! (median 10 ms, σ 0.4) with 1.5 % stragglers (10× slower); an open Poisson stream of calls at
//! 30 % to 90 % utilisation. Five strategies, each decision made by the runtime itself (a real
//! `Engine` per call, `start_alongside` for the hedge, `decide_copy` for the answers, the policy's
//! `HedgeAfter` over its own `Latencies`, a real `RetryBudget`):
//!
//! ```text
//! cargo run -p reattempt-bench --release --example hedge_sim      # writes docs/hedge.csv and docs/hedge.svg
//! cargo run -p reattempt-bench --release --example hedge_sim -- --calls 50000 --seed 7   # another run; writes nothing
//! ```
//!
//! The model is `reattempt_bench::sim::hedge` (`bench/src/sim/hedge.rs`); BENCHMARKS.md
//! ("Hedging") discusses the results.

use std::error::Error;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use plotters::prelude::SeriesLabelPosition;
use reattempt_bench::sim::chart;
use reattempt_bench::sim::hedge::{self, Outcome, Scenario, Strategy};

/// The fixed hedge delay: about the unhedged p95 at 30 % utilisation.
const FIXED: Duration = Duration::from_millis(50);

const STRATEGIES: [Strategy; 5] = [
    Strategy::Unhedged,
    Strategy::Fixed(FIXED),
    Strategy::P95,
    Strategy::FixedBudget(FIXED),
    Strategy::P95Budget,
];

/// The loads of the chart; the table shows 30, 60 and 90 %.
const LOADS: [f64; 7] = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

fn scenario(utilisation: f64, calls: u32, seed: u64) -> Scenario {
    Scenario {
        replicas: 10,
        median: Duration::from_millis(10),
        sigma: 0.4,
        straggler_rate: 0.015,
        straggler_factor: 10.0,
        utilisation,
        calls,
        seed,
    }
}

fn main() -> Result<(), Box<dyn Error>> {
    let (mut calls, mut seed, mut out) = (200_000u32, 15u64, None);
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--calls" => calls = value()?.parse()?,
            "--seed" => seed = value()?.parse()?,
            "--out" => out = Some(PathBuf::from(value()?)),
            other => {
                return Err(format!(
                    "unknown argument `{other}`; expected --calls N, --seed N, --out DIR"
                )
                .into());
            }
        }
    }
    if calls < 1000 {
        return Err("--calls must be at least 1000".into());
    }
    if out.is_none() && calls == 200_000 && seed == 15 {
        out = Some(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs"));
    }
    let started = std::time::Instant::now();
    let results: Vec<(f64, Vec<Outcome>)> = LOADS
        .iter()
        .map(|&u| {
            let s = scenario(u, calls, seed);
            (
                u,
                STRATEGIES
                    .iter()
                    .map(|&st| hedge::simulate(&s, st))
                    .collect(),
            )
        })
        .collect();

    println!(
        "10 replicas (one server and a FIFO queue each); service lognormal, median 10 ms, σ 0.4, \
         1.5 % stragglers ×10; {calls} calls (the first tenth a warm-up), seed {seed}; budget: a \
         hedge costs 20 tokens, a call that did not hedge deposits 1, 500 tokens\n"
    );
    println!(
        "| load | strategy | p50 | p99 | p99.9 | requests/call | p99 ÷ unhedged | replicas busy |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (u, outcomes) in results.iter().filter(|(u, _)| [0.3, 0.6, 0.9].contains(u)) {
        let base = outcomes[0].quantile(0.99).as_secs_f64();
        for o in outcomes {
            println!(
                "| {:.0} % | {} | {} | {} | {} | {:.3} | {:.2}× | {:.1} % |",
                u * 100.0,
                o.strategy.label(),
                ms(o.quantile(0.5)),
                ms(o.quantile(0.99)),
                ms(o.quantile(0.999)),
                o.requests_per_call,
                o.quantile(0.99).as_secs_f64() / base,
                o.busy * 100.0
            );
        }
    }
    println!("\nsimulated in {:.1} s", started.elapsed().as_secs_f64());
    if let Some(out) = &out {
        std::fs::create_dir_all(out)?;
        write_csv(&out.join("hedge.csv"), &results)?;
        plot(&out.join("hedge.svg"), calls, &results)?;
        println!("wrote {}/hedge.csv and hedge.svg", out.display());
    } else {
        println!("(not the default run: no files written; pass --out DIR to write them)");
    }
    Ok(())
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

fn write_csv(path: &Path, results: &[(f64, Vec<Outcome>)]) -> Result<(), Box<dyn Error>> {
    let mut csv =
        String::from("utilisation,strategy,p50_ms,p99_ms,p999_ms,requests_per_call,busy\n");
    for (u, outcomes) in results {
        for o in outcomes {
            writeln!(
                csv,
                "{u:.1},{},{:.2},{:.2},{:.2},{:.4},{:.4}",
                o.strategy.label(),
                o.quantile(0.5).as_secs_f64() * 1000.0,
                o.quantile(0.99).as_secs_f64() * 1000.0,
                o.quantile(0.999).as_secs_f64() * 1000.0,
                o.requests_per_call,
                o.busy
            )?;
        }
    }
    std::fs::write(path, csv)?;
    Ok(())
}

fn plot(path: &Path, calls: u32, results: &[(f64, Vec<Outcome>)]) -> Result<(), Box<dyn Error>> {
    let series: Vec<chart::Series> = STRATEGIES
        .iter()
        .enumerate()
        .zip(chart::PALETTE)
        .map(|((i, st), color)| chart::Series {
            name: st.label(),
            color,
            points: results
                .iter()
                .map(|(u, o)| (u * 100.0, o[i].quantile(0.99).as_secs_f64() * 1000.0))
                .collect(),
        })
        .collect();
    let top = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(100.0, f64::max)
        * 1.5;
    let title = format!("p99 latency of a call by load (10 replicas, {calls} calls)");
    chart::draw(
        path,
        &chart::Chart {
            title: &title,
            x_label: "utilisation without hedging (%)",
            y_label: "p99 (ms, log scale)",
            x_range: 25.0..95.0,
            y_range: 20.0..top,
            shade: None,
            reference: None,
            legend_at: SeriesLabelPosition::UpperLeft,
            log_y: true,
        },
        &series,
    )
}
