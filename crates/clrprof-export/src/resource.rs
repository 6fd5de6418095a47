//! The process the profiles come from, as OpenTelemetry resource attributes.

/// A resource attribute's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttributeValue {
    /// A string.
    Text(String),
    /// An integer.
    Int(i64),
}

/// The process the profiles come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// `service.name`.
    pub service_name: String,
    /// `service.version`, if given.
    pub service_version: Option<String>,
    /// `host.name`.
    pub host_name: String,
    /// `process.pid`.
    pub process_pid: u32,
    /// `process.executable.name`.
    pub executable_name: String,
    /// `process.runtime.name`, e.g. `.NET`.
    pub runtime_name: String,
    /// `process.runtime.version`, e.g. `8.0.4`.
    pub runtime_version: String,
    /// `container.id`, when the process's cgroup tells it.
    pub container_id: Option<String>,
    /// The user's labels, as further attributes, in the order given.
    pub labels: Vec<(String, String)>,
}

impl Resource {
    /// This process: its pid, executable, host name and container (from `/proc`), with the
    /// service and runtime names given. Fields that cannot be read are left empty.
    pub fn of_this_process(
        service_name: impl Into<String>,
        runtime_name: impl Into<String>,
        runtime_version: impl Into<String>,
    ) -> Resource {
        let executable_name = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_default();
        let host_name = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default();
        let container_id = std::fs::read_to_string("/proc/self/cgroup")
            .ok()
            .and_then(|c| container_id_from_cgroup(&c));
        Resource {
            service_name: service_name.into(),
            service_version: None,
            host_name,
            process_pid: std::process::id(),
            executable_name,
            runtime_name: runtime_name.into(),
            runtime_version: runtime_version.into(),
            container_id,
            labels: Vec::new(),
        }
    }

    /// The attributes, semantic conventions' keys first, then the labels.
    pub fn attributes(&self) -> Vec<(String, AttributeValue)> {
        let text = |s: &str| AttributeValue::Text(s.to_string());
        let mut out = vec![("service.name".to_string(), text(&self.service_name))];
        if let Some(v) = &self.service_version {
            out.push(("service.version".to_string(), text(v)));
        }
        out.push(("host.name".to_string(), text(&self.host_name)));
        out.push((
            "process.pid".to_string(),
            AttributeValue::Int(i64::from(self.process_pid)),
        ));
        out.push((
            "process.executable.name".to_string(),
            text(&self.executable_name),
        ));
        out.push(("process.runtime.name".to_string(), text(&self.runtime_name)));
        out.push((
            "process.runtime.version".to_string(),
            text(&self.runtime_version),
        ));
        if let Some(id) = &self.container_id {
            out.push(("container.id".to_string(), text(id)));
        }
        for (k, v) in &self.labels {
            out.push((k.clone(), text(v)));
        }
        out
    }
}

/// The container id in the text of `/proc/self/cgroup`: a 64-hex-digit path component (Docker,
/// containerd, CRI-O and Podman name the container's cgroup after it, bare or as
/// `<runtime>-<id>.scope`). None under a cgroup that does not name one (cgroup v2's `0::/`
/// inside a private cgroup namespace).
pub fn container_id_from_cgroup(cgroup: &str) -> Option<String> {
    for line in cgroup.lines() {
        let Some(path) = line.splitn(3, ':').nth(2) else {
            continue;
        };
        for component in path.rsplit('/') {
            let name = component.strip_suffix(".scope").unwrap_or(component);
            let id = name.rsplit('-').next().unwrap_or(name);
            if id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Some(id.to_ascii_lowercase());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "3f4b1c2d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f809";

    #[test]
    fn container_ids_from_the_runtimes_cgroup_names() {
        let v1 = format!("12:memory:/docker/{ID}\n11:cpu:/docker/{ID}\n");
        assert_eq!(container_id_from_cgroup(&v1).as_deref(), Some(ID));
        let kube = format!("0::/kubepods.slice/kubepods-pod1.slice/cri-containerd-{ID}.scope\n");
        assert_eq!(container_id_from_cgroup(&kube).as_deref(), Some(ID));
        let podman = format!("0::/user.slice/libpod-{ID}.scope/container\n");
        assert_eq!(container_id_from_cgroup(&podman).as_deref(), Some(ID));
        assert_eq!(container_id_from_cgroup("0::/\n"), None);
        assert_eq!(
            container_id_from_cgroup("0::/user.slice/user-0.slice/session-3.scope\n"),
            None
        );
        assert_eq!(container_id_from_cgroup("garbage"), None);
    }

    #[test]
    fn attributes_in_order_with_optional_ones_only_when_given() {
        let mut r = Resource {
            service_name: "shop".into(),
            service_version: None,
            host_name: "h".into(),
            process_pid: 42,
            executable_name: "dotnet".into(),
            runtime_name: ".NET".into(),
            runtime_version: "8.0.4".into(),
            container_id: None,
            labels: vec![("env".into(), "prod".into())],
        };
        let keys: Vec<String> = r.attributes().into_iter().map(|(k, _)| k).collect();
        assert_eq!(
            keys,
            [
                "service.name",
                "host.name",
                "process.pid",
                "process.executable.name",
                "process.runtime.name",
                "process.runtime.version",
                "env"
            ]
        );
        r.service_version = Some("1.2".into());
        r.container_id = Some(ID.into());
        let attrs = r.attributes();
        assert_eq!(attrs.len(), 9);
        assert_eq!(
            attrs[1],
            ("service.version".into(), AttributeValue::Text("1.2".into()))
        );
        assert_eq!(attrs[3], ("process.pid".into(), AttributeValue::Int(42)));
        assert_eq!(attrs[7].0, "container.id");
    }

    #[test]
    fn this_process() {
        let r = Resource::of_this_process("svc", ".NET", "8.0.4");
        assert_eq!(r.process_pid, std::process::id());
        assert!(!r.executable_name.is_empty());
    }
}
