//! Downloads from a symbol server: one `GET` per file, with timeouts and a size limit, into a
//! temporary file beside where the file will be kept.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use tempfile::NamedTempFile;

/// The largest file downloaded (a .NET 8 `libcoreclr.so.dbg` is about 100 MiB).
pub(super) const MAX_DOWNLOAD: u64 = 1 << 30;

/// A client for symbol servers: plain HTTP/1.1 or HTTPS (rustls, with the Mozilla root
/// certificates built in; the system's TLS on Windows), the proxy of `HTTPS_PROXY`/`HTTP_PROXY`/`ALL_PROXY` unless
/// `NO_PROXY` says otherwise, redirects followed (a server may send the download elsewhere).
pub(super) struct Client {
    agent: ureq::Agent,
    timeout: Duration,
}

/// What a server answered for one file.
pub(super) enum Answer {
    /// The file, downloaded into a temporary file, and its size.
    File(NamedTempFile, u64),
    /// The server does not have it (404 or 410).
    NotFound,
}

/// Why a download failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Failure {
    /// The server cannot be used: no connection, no answer in time, a broken transfer. It is
    /// not asked again in this report.
    Server(String),
    /// This file only: another status than found or not found, or a file too large.
    File(String),
    /// The file could not be written where it was to go (the cache).
    Cache(String),
}

impl Client {
    /// A client that waits at most `timeout` for the server to resolve, to connect, to
    /// answer, and for each read of a download (a long download is fine while data flows).
    pub(super) fn new(timeout: Duration) -> Client {
        let agent = ureq::Agent::config_builder()
            .timeout_resolve(Some(timeout))
            .timeout_connect(Some(timeout))
            .timeout_send_request(Some(timeout))
            .timeout_recv_response(Some(timeout))
            .timeout_per_read(Some(timeout))
            .http_status_as_error(false)
            .user_agent(concat!("clrprof/", env!("CARGO_PKG_VERSION")));
        // Windows has native-tls instead of rustls (see Cargo.toml), which ureq uses only
        // when told.
        #[cfg(windows)]
        let agent = agent.tls_config(
            ureq::tls::TlsConfig::builder()
                .provider(ureq::tls::TlsProvider::NativeTls)
                .build(),
        );
        let agent = agent.build().new_agent();
        Client { agent, timeout }
    }

    /// `GET url`, the body written into a temporary file in `dir`; `progress` is told the
    /// bytes received so far, now and then.
    pub(super) fn download(
        &self,
        url: &str,
        dir: &Path,
        progress: &mut dyn FnMut(u64),
    ) -> Result<Answer, Failure> {
        let mut response = self
            .agent
            .get(url)
            .call()
            .map_err(|e| Failure::Server(self.describe(&e)))?;
        let status = response.status();
        if status == 404 || status == 410 {
            return Ok(Answer::NotFound);
        }
        if !status.is_success() {
            return Err(Failure::File(
                format!(
                    "HTTP {} {}",
                    status.as_u16(),
                    status.canonical_reason().unwrap_or("")
                )
                .trim_end()
                .to_string(),
            ));
        }
        let too_large = || Failure::File(format!("larger than {} MiB", MAX_DOWNLOAD >> 20));
        if response
            .body()
            .content_length()
            .is_some_and(|n| n > MAX_DOWNLOAD)
        {
            return Err(too_large());
        }
        let mut file = tempfile::Builder::new()
            .prefix(".download-")
            .tempfile_in(dir)
            .map_err(|e| Failure::Cache(format!("{}: {e}", dir.display())))?;
        let mut body = response.body_mut().as_reader().take(MAX_DOWNLOAD + 1);
        let mut buf = vec![0u8; 256 << 10];
        let mut size = 0u64;
        let mut shown = Instant::now();
        loop {
            let n = match body.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Failure::Server(self.describe_io(&e))),
            };
            size += n as u64;
            if size > MAX_DOWNLOAD {
                return Err(too_large());
            }
            file.write_all(&buf[..n])
                .map_err(|e| Failure::Cache(format!("{}: {e}", file.path().display())))?;
            if shown.elapsed() >= Duration::from_millis(200) {
                progress(size);
                shown = Instant::now();
            }
        }
        file.flush()
            .map_err(|e| Failure::Cache(format!("{}: {e}", file.path().display())))?;
        Ok(Answer::File(file, size))
    }

    fn no_answer(&self) -> String {
        format!("no answer within {} s", self.timeout.as_secs_f64())
    }

    fn describe(&self, e: &ureq::Error) -> String {
        match e {
            ureq::Error::Timeout(_) => self.no_answer(),
            ureq::Error::Io(e) => self.describe_io(e),
            ureq::Error::HostNotFound => "host not found".into(),
            ureq::Error::ConnectionFailed => "cannot connect".into(),
            e => e.to_string(),
        }
    }

    fn describe_io(&self, e: &std::io::Error) -> String {
        if e.kind() == std::io::ErrorKind::TimedOut {
            return self.no_answer();
        }
        match e
            .get_ref()
            .and_then(|inner| inner.downcast_ref::<ureq::Error>())
        {
            Some(inner) => self.describe(inner),
            None => e.to_string(),
        }
    }
}
