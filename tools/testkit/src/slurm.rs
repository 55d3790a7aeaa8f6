//! A real Slurm cluster for tests: Debian's munged, `slurmctld -D` and one
//! `slurmd -D -N nK` per node (Slurm 22.05, scripts/deps.sh installs them),
//! no systemd, everything (munge key and socket, state, spool, logs, fake
//! GPU device nodes) in a temp dir. Every node is 127.0.0.1 with its own
//! slurmd port and 4 fake GPUs (`mknod DIR/dev/nvidiaN c 195 N`, listed in
//! gres.conf with AutoDetect=off), so `srun --gres=gpu:2` sets
//! CUDA_VISIBLE_DEVICES=0,1 as on a real GPU node. Clients find the
//! cluster through `SLURM_CONF` ([`Slurm::cmd`], [`Slurm::env`]).
//!
//! Drop cancels every job, stops the daemons and kills every process a job
//! left behind (a server started with setsid escapes proctrack/linuxproc):
//! each job's environment holds `SLURM_CONF=<this cluster's config>`, and
//! slurmd's children carry our marker, so /proc finds them even after a
//! panic.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const DAEMONS: [&str; 4] = [
    "/usr/sbin/munged",
    "/usr/sbin/slurmctld",
    "/usr/sbin/slurmd",
    "/usr/bin/sbatch",
];

/// The environment variable naming a test cluster's dir on the daemons
/// (and every slurmstepd they fork), for [`Drop`]'s sweep of /proc.
const MARKER: &str = "SWEEPKIT_TEST_SLURM";
/// Which cluster's node a slurmd (and its slurmstepds) serves.
const NODE_MARKER: &str = "SWEEPKIT_TEST_SLURM_NODE";

/// Fake GPUs per node.
pub const GPUS_PER_NODE: usize = 4;

/// A running test cluster with one partition, `debug`, over every node.
pub struct Slurm {
    pub dir: PathBuf,
    /// slurm.conf: what `SLURM_CONF` names.
    pub conf: PathBuf,
    /// Node names, `n1`, `n2`, ...
    pub nodes: Vec<String>,
    /// The default partition, where sweeps submit.
    pub partition: String,
    /// With [`Slurm::start_preemptible`]: a second partition over the same
    /// nodes, of a higher priority tier, whose jobs preempt (cancel) the
    /// default partition's (`PreemptMode=CANCEL`: Slurm ends them
    /// PREEMPTED).
    pub urgent: Option<String>,
    min_job_age_s: u32,
    cred_expire_s: u32,
    munged: Option<Child>,
    ctld: Option<Child>,
    slurmd: Vec<(String, Child)>,
}

/// What a test cluster differs in.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// An `urgent` partition whose jobs preempt the default partition's
    /// ([`Slurm::urgent`]).
    pub preempt: bool,
    /// `MinJobAge`: how long slurmctld keeps an ended job (it purges every
    /// 60 s; 2 is the least Slurm takes).
    pub min_job_age_s: u32,
    /// `AuthInfo=cred_expire`: a job credential's life, which is also how
    /// long slurmctld holds a requeued job back (its BeginTime) and how
    /// long slurmd refuses to launch a job id it killed ("Job credential
    /// revoked"); Slurm's default 120.
    pub cred_expire_s: u32,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            preempt: false,
            min_job_age_s: 600,
            cred_expire_s: 120,
        }
    }
}

/// True when munged, slurmctld, slurmd and the client commands exist.
pub fn available() -> bool {
    DAEMONS.iter().all(|p| Path::new(p).exists())
}

/// Processes whose environment holds `KEY=VALUE` for one of `pairs`.
fn pids_with_env(pairs: &[(&str, &str)]) -> Vec<u32> {
    let wanted: Vec<Vec<u8>> = pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}").into_bytes())
        .collect();
    let me = std::process::id();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    rd.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
        .filter(|pid| {
            let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
            env.split(|b| *b == 0)
                .any(|kv| wanted.iter().any(|w| kv == w.as_slice()))
        })
        .collect()
}

/// The processes of the test cluster that lived in `dir` still running:
/// its daemons, their slurmstepds and every process of its jobs (after
/// the cluster's drop, none).
pub fn left_behind(dir: &Path) -> Vec<u32> {
    let marker = dir.display().to_string();
    let conf = dir.join("slurm.conf").display().to_string();
    pids_with_env(&[(MARKER, &marker), ("SLURM_CONF", &conf)])
}

fn kill_all(pids: &[u32]) {
    if pids.is_empty() {
        return;
    }
    let _ = Command::new("kill")
        .arg("-KILL")
        .args(pids.iter().map(u32::to_string))
        .stderr(Stdio::null())
        .status();
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

impl Slurm {
    /// Start a cluster of `nodes` nodes and wait until every node is idle;
    /// None (through the gate) when Slurm or munge is not installed.
    pub fn start(nodes: usize) -> Option<Slurm> {
        Self::start_with(nodes, Options::default())
    }

    /// [`Slurm::start`] with the [`Options`] a test needs.
    pub fn start_with(nodes: usize, o: Options) -> Option<Slurm> {
        if !available() {
            crate::skip(
                "slurmctld, slurmd, slurm-client or munge not installed \
                 (scripts/deps.sh installs them)",
            );
            return None;
        }
        crate::ran("slurm");
        let dir = crate::temp_dir("slurm");
        let mut s = Slurm {
            conf: dir.join("slurm.conf"),
            nodes: (1..=nodes).map(|i| format!("n{i}")).collect(),
            partition: "debug".into(),
            urgent: o.preempt.then(|| "urgent".into()),
            min_job_age_s: o.min_job_age_s,
            cred_expire_s: o.cred_expire_s,
            dir,
            munged: None,
            ctld: None,
            slurmd: Vec::new(),
        };
        s.write_config();
        s.munged = Some(s.start_munged());
        s.ctld = Some(s.daemon("slurmctld", &["-D", "-f"], None));
        for n in s.nodes.clone() {
            let child = s.daemon("slurmd", &["-D", "-N", &n, "-f"], Some(&n));
            s.slurmd.push((n, child));
        }
        s.wait_idle(Duration::from_secs(30));
        Some(s)
    }

    fn path(&self, rel: &str) -> String {
        self.dir.join(rel).display().to_string()
    }

    /// slurm.conf (the minimal config, plus timeouts short enough
    /// that a dead node is NODE_FAIL within half a minute, and long enough
    /// that a busy machine's slurmd is not taken for dead), gres.conf, the
    /// fake GPUs.
    fn write_config(&self) {
        for d in ["munge", "state", "spool", "log", "dev"] {
            std::fs::create_dir_all(self.dir.join(d)).unwrap();
        }
        let d = |rel: &str| self.path(rel);
        let mut nodes = String::new();
        let mut gres = String::from("AutoDetect=off\n");
        for (i, n) in self.nodes.iter().enumerate() {
            std::fs::create_dir_all(self.dir.join("spool").join(n)).unwrap();
            let port = crate::free_port();
            nodes.push_str(&format!(
                "NodeName={n} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} \
                 CPUs=2 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN\n"
            ));
            let first = i * GPUS_PER_NODE;
            for g in first..first + GPUS_PER_NODE {
                self.mknod(g);
            }
            let last = first + GPUS_PER_NODE - 1;
            gres.push_str(&format!(
                "NodeName={n} Name=gpu File={}/nvidia[{first}-{last}]\n",
                d("dev")
            ));
        }
        let text = format!(
            "# sweepkit test cluster (testkit::slurm)
ClusterName=sweepkit
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort={ctld}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={sock},cred_expire={cred_expire}
CredType=cred/munge
StateSaveLocation={state}
SlurmdSpoolDir={spool}/%n
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd-%n.pid
SlurmctldLogFile={log}/slurmctld.log
SlurmdLogFile={log}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
MinJobAge={min_job_age}
FirstJobId={first_job}
KillWait=2
SlurmdTimeout=15
MessageTimeout=10
InactiveLimit=0
{preempt}{nodes}PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP PriorityTier=1
{urgent}",
            preempt = match &self.urgent {
                Some(_) => "PreemptType=preempt/partition_prio\nPreemptMode=CANCEL\n",
                None => "",
            },
            urgent = self.urgent.as_ref().map_or_else(String::new, |u| {
                format!("PartitionName={u} Nodes=ALL MaxTime=INFINITE State=UP PriorityTier=2\n")
            }),
            ctld = crate::free_port(),
            min_job_age = self.min_job_age_s,
            cred_expire = self.cred_expire_s,
            // Clusters of tests running at once number their jobs apart,
            // so ports derived from job ids seldom meet on this machine.
            first_job = 1 + (std::process::id() % 97) * 113,
            sock = d("munge/socket"),
            state = d("state"),
            spool = d("spool"),
            dir = self.dir.display(),
            log = d("log"),
        );
        write(&self.conf, &text);
        write(&self.dir.join("gres.conf"), &gres);
    }

    /// `DIR/dev/nvidiaN`, a character device 195:N as the driver makes.
    fn mknod(&self, n: usize) {
        let p = self.path(&format!("dev/nvidia{n}"));
        crate::helper::checked(
            Command::new("mknod").args([&p, "c", "195", &n.to_string()]),
            "mknod a fake GPU",
        );
    }

    /// munged in the foreground with its own key, socket and seed.
    fn start_munged(&self) -> Child {
        let key = self.dir.join("munge/munge.key");
        let mut bytes = [0u8; 128];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
            .expect("read /dev/urandom");
        std::fs::write(&key, bytes).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).unwrap();
        let log = self.log_file("munged.out");
        let child = Command::new(DAEMONS[0])
            .args(["-F", "-f"])
            .arg(format!("--socket={}", self.path("munge/socket")))
            .arg(format!("--key-file={}", key.display()))
            .arg(format!("--log-file={}", self.path("log/munged.log")))
            .arg(format!("--pid-file={}", self.path("munge/munged.pid")))
            .arg(format!("--seed-file={}", self.path("munge/seed")))
            .env(MARKER, &self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("spawn munged");
        let sock = self.dir.join("munge/socket");
        let t0 = Instant::now();
        while !sock.exists() {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "munged did not start: {}",
                self.log("munged.out")
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        child
    }

    fn log_file(&self, name: &str) -> std::fs::File {
        std::fs::File::create(self.dir.join("log").join(name)).unwrap()
    }

    /// A file of `log/` ("" when missing).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join("log").join(name)).unwrap_or_default()
    }

    /// `/usr/sbin/PROG ARGS... SLURM_CONF`, marked for Drop's sweep.
    fn daemon(&self, prog: &str, args: &[&str], node: Option<&str>) -> Child {
        let name = format!(
            "{prog}{}.out",
            node.map(|n| format!("-{n}")).unwrap_or_default()
        );
        let log = self.log_file(&name);
        let mut c = Command::new(format!("/usr/sbin/{prog}"));
        c.args(args)
            .arg(&self.conf)
            .env("SLURM_CONF", &self.conf)
            .env(MARKER, &self.dir)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        if let Some(n) = node {
            c.env(NODE_MARKER, self.node_mark(n));
        }
        c.spawn().unwrap_or_else(|e| panic!("spawn {prog}: {e}"))
    }

    /// A client command (`sbatch`, `squeue`, ...) for this cluster.
    pub fn cmd(&self, prog: &str) -> Command {
        let mut c = Command::new(prog);
        c.env("SLURM_CONF", &self.conf);
        c
    }

    /// `("SLURM_CONF", path)`: what a tool that runs Slurm's clients needs.
    pub fn env(&self) -> (&'static str, PathBuf) {
        ("SLURM_CONF", self.conf.clone())
    }

    /// stdout of a client command; panics with its stderr when it fails.
    pub fn out(&self, prog: &str, args: &[&str]) -> String {
        let o = crate::helper::checked(self.cmd(prog).args(args), &format!("{prog} {args:?}"));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Each node's state, as `sinfo -N` says it (`idle`, `down*`, ...).
    pub fn node_states(&self) -> Vec<(String, String)> {
        let mut states: Vec<(String, String)> = self
            .out("sinfo", &["-h", "-N", "-o", "%N %T"])
            .lines()
            .filter_map(|l| l.split_once(' '))
            .map(|(n, s)| (n.to_string(), s.to_string()))
            .collect();
        states.dedup(); // once per partition the node is in
        states
    }

    fn wait_idle(&self, limit: Duration) {
        let t0 = Instant::now();
        loop {
            let ok = self
                .cmd("sinfo")
                .args(["-h", "-N", "-o", "%N %T"])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
            // `sinfo -N` lists a node once per partition it is in.
            let idle = ok.as_deref().is_some_and(|t| {
                let idle: std::collections::BTreeSet<&str> =
                    t.lines().filter_map(|l| l.strip_suffix(" idle")).collect();
                idle.len() == self.nodes.len()
            });
            if idle {
                return;
            }
            if t0.elapsed() > limit {
                panic!(
                    "test cluster not idle after {limit:?}: {ok:?}\n--- slurmctld\n{}\n--- slurmd-n1\n{}",
                    self.log("slurmctld.log"),
                    self.log("slurmd-n1.log")
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The marker a node's slurmd and slurmstepds carry: this cluster's
    /// dir and the node, so killing a node of one test's cluster never
    /// touches another test's.
    fn node_mark(&self, node: &str) -> String {
        format!("{}:{node}", self.dir.display())
    }

    /// Job ids in the queue (pending or running), from `squeue`.
    pub fn queue(&self) -> Vec<String> {
        self.out("squeue", &["-h", "-o", "%i"])
            .lines()
            .map(str::to_string)
            .collect()
    }

    /// A node dies: its slurmd, the slurmstepds it forked and every
    /// process of the jobs on it are killed at once (SIGKILL); slurmctld
    /// marks it down after SlurmdTimeout and fails its jobs NODE_FAIL.
    pub fn kill_node(&mut self, node: &str) {
        if let Some(i) = self.slurmd.iter().position(|(n, _)| n == node) {
            let (_, mut child) = self.slurmd.remove(i);
            let _ = child.kill();
            let _ = child.wait();
        }
        let conf = self.conf.display().to_string();
        for _ in 0..3 {
            let mut pids = pids_with_env(&[(NODE_MARKER, &self.node_mark(node))]);
            let jobs = pids_with_env(&[("SLURMD_NODENAME", node)]);
            let ours = pids_with_env(&[("SLURM_CONF", &conf)]);
            pids.extend(jobs.into_iter().filter(|p| ours.contains(p)));
            kill_all(&pids);
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every process this cluster left: daemons, slurmstepds, jobs.
    fn leftovers(&self) -> Vec<u32> {
        left_behind(&self.dir)
    }
}

impl Drop for Slurm {
    fn drop(&mut self) {
        // Cancel first, so the jobs' own traps stop their servers; then
        // whatever is left goes by SIGKILL.
        for part in std::iter::once(&self.partition).chain(&self.urgent) {
            let _ = self
                .cmd("scancel")
                .args(["--partition", part])
                .stderr(Stdio::null())
                .status();
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            let q = self.cmd("squeue").args(["-h", "-o", "%i"]).output();
            if q.map(|o| o.stdout.is_empty()).unwrap_or(true) {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        for (_, c) in &mut self.slurmd {
            let _ = c.kill();
            let _ = c.wait();
        }
        for c in [self.ctld.as_mut(), self.munged.as_mut()]
            .into_iter()
            .flatten()
        {
            let _ = c.kill();
            let _ = c.wait();
        }
        for _ in 0..20 {
            let left = self.leftovers();
            if left.is_empty() {
                break;
            }
            kill_all(&left);
            std::thread::sleep(Duration::from_millis(50));
        }
        // A failing test's logs stay to be read.
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}
