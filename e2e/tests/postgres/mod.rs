//! A private PostgreSQL cluster for one test: Debian's `postgresql` package's binaries
//! (`/usr/lib/postgresql/<major>/bin`: `initdb`, `pg_ctl`, `postgres`), a data directory made by
//! `initdb` in a temporary directory, a server on a free loopback port, stopped (crash-like or
//! cleanly) and started again at will, stopped and removed when dropped.
//!
//! PostgreSQL refuses to run as root, and CI runs as root: then every `initdb` and `pg_ctl` runs
//! as the `postgres` user that Debian's package creates (`runuser -u postgres --`), and the
//! temporary directory is given to that user. The package's own cluster (its service) is never
//! used.
//!
//! No binaries, no `postgres` user under root, or a server that does not start: the test fails,
//! saying which. It never passes without a server.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A running (or stopped, between [`Cluster::stop_immediate`] / [`Cluster::stop_fast`] and
/// [`Cluster::start`]) PostgreSQL server of its own, on `127.0.0.1:port`, trusting every local
/// connection (`initdb -A trust`), as superuser `postgres`, database `postgres`.
pub struct Cluster {
    /// `postgres://postgres@127.0.0.1:{port}/postgres`.
    pub url: String,
    pub port: u16,
    /// The directory of the PostgreSQL binaries (`…/bin`).
    bin: PathBuf,
    /// Holds the data directory (`data/`), the server's log (`log`) and its Unix socket.
    dir: tempfile::TempDir,
    /// Run `initdb` and `pg_ctl` through `runuser -u postgres --` (this process is root).
    as_postgres: bool,
}

impl Cluster {
    /// `initdb` and start a server on a free port. Panics (failing the test) when PostgreSQL is
    /// not installed or does not start.
    pub fn start_new() -> Self {
        Self::start_new_with(&[])
    }

    /// [`Cluster::start_new`], with server settings (`-c name=value`) for this first start only:
    /// a later [`Cluster::start`] starts with the defaults.
    pub fn start_new_with(settings: &[(&str, &str)]) -> Self {
        let bin = find_bin();
        let as_postgres = is_root();
        // Under root, the directory must be reachable by user `postgres`: the usual temporary
        // directory, unless TMPDIR points somewhere closed to others (then /tmp).
        let dir = if as_postgres && !reachable_by_others(&std::env::temp_dir()) {
            tempfile::tempdir_in("/tmp")
        } else {
            tempfile::tempdir()
        }
        .expect("a temporary directory");
        if as_postgres {
            let (uid, gid) = postgres_ids();
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .expect("chown the cluster's directory to user postgres");
        }
        // A free port: bind one, read it, let it go (a race with another process taking it in
        // between is possible, and would show as a failed start).
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let cluster = Cluster {
            url: format!("postgres://postgres@127.0.0.1:{port}/postgres"),
            port,
            bin,
            dir,
            as_postgres,
        };
        // `--no-sync`: nothing here has to survive the machine, only the server's processes
        // (a crash-like stop kills those; what they wrote is in the OS' cache).
        cluster.run_ok(
            "initdb",
            &[
                "-D",
                &cluster.data().to_string_lossy(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ],
        );
        cluster.start_with(settings);
        cluster
    }

    /// Starts the server and waits until it accepts connections (`pg_ctl -w`: after a
    /// crash-like stop, that includes its crash recovery). `fsync=off` as for `--no-sync`; small
    /// shared buffers, as several clusters may run at once on a small machine.
    pub fn start(&self) {
        self.start_with(&[]);
    }

    fn start_with(&self, settings: &[(&str, &str)]) {
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off -c shared_buffers=16MB \
             -c max_connections=40",
            self.port,
            self.dir.path().display(),
        );
        for (name, value) in settings {
            write!(options, " -c {name}={value}").unwrap();
        }
        let log = self.dir.path().join("log");
        self.run_ok(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-l",
                &log.to_string_lossy(),
                "-o",
                &options,
                "-w",
                "-t",
                "30",
                "start",
            ],
        );
    }

    /// `pg_ctl stop -m immediate`: the postmaster SIGQUITs every backend, which exit without
    /// finishing their work (each sends its client a `57P01` error when it can); the next start
    /// runs crash recovery. What was committed stays; what was in flight is lost.
    pub fn stop_immediate(&self) {
        self.stop("immediate");
    }

    /// `pg_ctl stop -m fast`: running transactions are rolled back and their clients
    /// disconnected (`57P01`), then a clean shutdown (a checkpoint).
    pub fn stop_fast(&self) {
        self.stop("fast");
    }

    fn stop(&self, mode: &str) {
        self.run_ok(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-m",
                mode,
                "-w",
                "stop",
            ],
        );
    }

    /// The server's log so far (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("log")).unwrap_or_default()
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs one of the binaries (as `postgres` under root), in the cluster's directory (the
    /// test's working directory may be closed to `postgres`).
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let path = self.bin.join(program);
        let mut command = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&path);
            c
        } else {
            Command::new(&path)
        };
        command
            .args(args)
            .current_dir(self.dir.path())
            // The server's own defaults, not the caller's PGHOST, PGPORT…
            .env_remove("PGDATA")
            .env_remove("PGPORT")
            .env_remove("PGHOST")
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", path.display()))
    }

    fn run_ok(&self, program: &str, args: &[&str]) {
        let out = self.run(program, args);
        assert!(
            out.status.success(),
            "{program} {args:?} failed ({}):\n{}{}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log(),
        );
    }
}

impl Drop for Cluster {
    /// Stops the server the crash-like way (nothing to keep); the directory goes with `dir`.
    fn drop(&mut self) {
        let _ = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().to_string_lossy(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
    }
}

/// The newest `/usr/lib/postgresql/<major>/bin` that has `initdb`, `pg_ctl` and `postgres`.
fn find_bin() -> PathBuf {
    let root = Path::new("/usr/lib/postgresql");
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = entry.path().join("bin");
            ["initdb", "pg_ctl", "postgres"]
                .iter()
                .all(|b| bin.join(b).is_file())
                .then_some((major, bin))
        })
        .collect();
    found.sort();
    match found.pop() {
        Some((_, bin)) => bin,
        None => panic!(
            "PostgreSQL's server binaries (initdb, pg_ctl, postgres) are not under \
             /usr/lib/postgresql/*/bin: install Debian's `postgresql` package \
             (`apt-get install -y postgresql`, as .ci/run does)"
        ),
    }
}

/// Whether every directory from the root down to `dir` lets other users through (`o+x`).
fn reachable_by_others(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    dir.ancestors()
        .all(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 != 0))
}

/// Whether this process runs as root (PostgreSQL will not).
fn is_root() -> bool {
    id(&["-u"]) == 0
}

/// The uid and gid of user `postgres`, which Debian's package creates.
fn postgres_ids() -> (u32, u32) {
    (id(&["-u", "postgres"]), id(&["-g", "postgres"]))
}

fn id(args: &[&str]) -> u32 {
    let out = Command::new("id")
        .args(args)
        .output()
        .expect("running `id`");
    assert!(
        out.status.success(),
        "`id {}` failed: {} (running as root, PostgreSQL needs the `postgres` user that \
         Debian's `postgresql` package creates)",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim(),
    );
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("a number from `id`")
}
