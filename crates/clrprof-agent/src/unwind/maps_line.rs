//! One line of `/proc/self/maps`, parsed: the module map reads the executable ones, the
//! sampler the others too (a thread's stack).

/// The fields of one `/proc/self/maps` line. (Where there is no module map, only the range
/// and permissions are read.)
#[cfg_attr(
    not(all(target_os = "linux", target_arch = "x86_64")),
    allow(dead_code)
)]
pub struct MapsLine<'a> {
    pub start: usize,
    pub end: usize,
    pub executable: bool,
    pub offset: u64,
    pub dev: &'a str,
    pub inode: u64,
    pub path: &'a str,
    pub deleted: bool,
}

impl<'a> MapsLine<'a> {
    /// Parses `start-end perms offset dev inode [path]`.
    pub fn parse(line: &'a str) -> Option<MapsLine<'a>> {
        let (range, rest) = field(line)?;
        let (perms, rest) = field(rest)?;
        let (offset, rest) = field(rest)?;
        let (dev, rest) = field(rest)?;
        let (inode, rest) = field(rest)?;
        let (start, end) = range.split_once('-')?;
        let mut path = rest.trim();
        let deleted = path.ends_with(" (deleted)");
        if deleted {
            path = path.trim_end_matches(" (deleted)");
        }
        Some(MapsLine {
            start: usize::from_str_radix(start, 16).ok()?,
            end: usize::from_str_radix(end, 16).ok()?,
            executable: perms.as_bytes().get(2) == Some(&b'x'),
            offset: u64::from_str_radix(offset, 16).ok()?,
            dev,
            inode: inode.parse().ok()?,
            path,
            deleted,
        })
    }
}

/// Splits off the first space-separated field.
fn field(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start_matches(' ');
    let end = s.find(' ').unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], &s[end..]))
}
