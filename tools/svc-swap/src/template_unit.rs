//! systemd template units (`sglang@.service`, one instance per GPU slot:
//! `sglang@0.service`, `sglang@1.service`): svc-swap edits an instance as
//! any unit (its drop-in is the instance's own), and reads the port an
//! instance's launch line makes from its instance name (`--port 800%i`),
//! so a sweep's `--url` need not repeat it. Pure.

use crate::execstart::{self, ExecLine};

/// The instance name of a template unit's instance (`sim@1.service`:
/// `1`); `None` for a unit that is no instance.
fn instance(unit: &str) -> Option<&str> {
    let (_, rest) = unit.split_once('@')?;
    let inst = &rest[..rest.rfind('.').unwrap_or(rest.len())];
    (!inst.is_empty()).then_some(inst)
}

/// An instance's port where its launch line's `--port` is made from the
/// instance name (`--port 800%i` read for `sim@1.service`: 8001), as
/// systemd expands `%i` and `%I`; `None` for a unit that is no instance
/// or a port written without them (the launch line says it already).
pub fn instance_port(unit: &str, line: &ExecLine) -> Option<u16> {
    let inst = instance(unit)?;
    let w = &line.words;
    let word = w.iter().enumerate().find_map(|(i, x)| match x.as_str() {
        "--port" => w.get(i + 1).map(String::as_str),
        x => x.strip_prefix("--port="),
    })?;
    if !word.contains("%i") && !word.contains("%I") {
        return None;
    }
    let expanded = word.replace("%i", inst).replace("%I", inst);
    execstart::logical(&expanded).parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_port_is_read_from_its_name() {
        let line = |s: &str| execstart::parse(s).unwrap();
        let l = line("/bin/sim --port 800%i --seed 1");
        assert_eq!(instance_port("sim@1.service", &l), Some(8001));
        assert_eq!(
            instance_port("sim@7", &line("/bin/sim --port=90%I")),
            Some(907)
        );
        assert_eq!(instance_port("sim.service", &l), None, "no instance");
        assert_eq!(instance_port("sim@.service", &l), None, "the template");
        assert_eq!(
            instance_port("sim@1.service", &line("/bin/sim --port 8000")),
            None
        );
        assert_eq!(instance_port("sim@a.service", &l), None, "not a number");
    }
}
