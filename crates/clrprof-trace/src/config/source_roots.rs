//! Where the source files that symbols name are on another machine: `FROM=TO` rules, which
//! `report --source-root` applies to find a file's text and export mode
//! (`CLRPROF_EXPORT_SOURCE_ROOTS`) to the file names its profiles carry.

use std::path::PathBuf;

/// A source root rule that is not `FROM=TO`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{rule}`: a source root is FROM=TO, e.g. /build/src=/home/me/src")]
pub struct BadSourceRoot {
    /// The rule as given.
    pub rule: String,
}

/// Turns `/build/agent/src/App.cs` into `/home/me/src/App.cs` for a rule `/build/agent=/home/me`
/// (and into `src/App.cs` for `/build/agent=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceRoots {
    rules: Vec<(String, String)>,
}

impl SourceRoots {
    /// What separates the rules of one variable (`;`, as paths may hold `:` and `,`).
    pub const SEPARATOR: char = ';';

    /// Rules `FROM=TO` (the first that matches a path's start applies).
    pub fn parse(rules: &[String]) -> Result<SourceRoots, BadSourceRoot> {
        let mut out = SourceRoots::default();
        for rule in rules {
            match rule.split_once('=') {
                Some((from, to)) if !from.is_empty() => {
                    out.rules.push((from.to_string(), to.to_string()))
                }
                _ => return Err(BadSourceRoot { rule: rule.clone() }),
            }
        }
        Ok(out)
    }

    /// Rules separated by [`Self::SEPARATOR`] (empty parts left out).
    pub fn parse_list(text: &str) -> Result<SourceRoots, BadSourceRoot> {
        let rules: Vec<String> = text
            .split(Self::SEPARATOR)
            .map(str::trim)
            .filter(|r| !r.is_empty())
            .map(str::to_string)
            .collect();
        SourceRoots::parse(&rules)
    }

    /// The rules as [`Self::parse_list`] reads them.
    pub fn to_list(&self) -> String {
        let rules: Vec<String> = self
            .rules
            .iter()
            .map(|(from, to)| format!("{from}={to}"))
            .collect();
        rules.join(&Self::SEPARATOR.to_string())
    }

    /// Whether there is no rule.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Where `file` (as the symbols name it) is.
    pub fn map(&self, file: &str) -> PathBuf {
        for (from, to) in &self.rules {
            if let Some(rest) = file.strip_prefix(from.as_str()) {
                return PathBuf::from(to).join(rest.trim_start_matches(['/', '\\']));
            }
        }
        PathBuf::from(file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_rule_whose_start_matches_applies() {
        let roots =
            SourceRoots::parse_list("/build/agent=/home/me; /build=/src ;/ci/repo/=").unwrap();
        assert_eq!(
            roots.map("/build/agent/src/App.cs"),
            PathBuf::from("/home/me/src/App.cs")
        );
        assert_eq!(roots.map("/build/x/Y.cs"), PathBuf::from("/src/x/Y.cs"));
        assert_eq!(roots.map("/ci/repo/lib/Z.cs"), PathBuf::from("lib/Z.cs"));
        assert_eq!(
            roots.map("/elsewhere/W.cs"),
            PathBuf::from("/elsewhere/W.cs")
        );
        assert_eq!(
            SourceRoots::parse_list(&roots.to_list()).unwrap(),
            roots,
            "{}",
            roots.to_list()
        );
    }

    #[test]
    fn a_rule_without_its_from_part_is_refused() {
        for bad in ["/build", "=/home/me"] {
            assert_eq!(
                SourceRoots::parse(&[bad.to_string()]),
                Err(BadSourceRoot { rule: bad.into() })
            );
        }
        assert!(SourceRoots::parse_list("").unwrap().is_empty());
    }
}
