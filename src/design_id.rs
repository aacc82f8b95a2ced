//! The ids of the lock designs, as used in scenario files and on the command line.

use std::fmt;
use std::str::FromStr;

/// Every lock design locklab knows, by the id used in scenario files.
///
/// The first seven are the classic mistakes (see [`crate::pitfalls`]); the last four are
/// the designs offered for production use (see [`crate::design`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DesignId {
    /// `SETNX key token`, release by `DEL`: no expiry at all.
    NaiveSetnx,
    /// `EXISTS key`, then `SET key token PX ttl` when it was 0; release by `DEL`.
    ExistsSet,
    /// `SETNX`, then `PEXPIRE` as a second command; release by `DEL`.
    SetnxExpire,
    /// `SETNX key expiry-timestamp`; steal an expired lock with `GETSET`; release by `DEL`.
    GetsetTimestamp,
    /// `SET key token NX PX ttl`, release by plain `DEL`.
    SetPxDel,
    /// `SET NX PX`, release by `GET`, compare, then `DEL` (two commands).
    SetPxGetDel,
    /// `SET NX PX`, Lua release, renewed every ttl/3 by `GET` (not nil?) then `PEXPIRE`.
    GetExpireRenewal,
    /// `SET NX PX`, release by a Lua compare-and-delete.
    LuaRelease,
    /// `lua-release` plus a renewal (compare-and-pexpire) every ttl/3.
    Watchdog,
    /// Redisson's reentrant hash lock: owner field with a hold count.
    Reentrant,
    /// Redlock: `SET NX PX` on N independent masters, majority quorum.
    Redlock,
    /// A lock a scenario brings as commands and Lua scripts (its `[lock]` table); not
    /// in [`DesignId::ALL`], which lists the built-in designs.
    Custom,
}

impl DesignId {
    /// The built-in designs, in the order of the design table.
    pub const ALL: [DesignId; 11] = [
        DesignId::NaiveSetnx,
        DesignId::ExistsSet,
        DesignId::SetnxExpire,
        DesignId::GetsetTimestamp,
        DesignId::SetPxDel,
        DesignId::SetPxGetDel,
        DesignId::GetExpireRenewal,
        DesignId::LuaRelease,
        DesignId::Watchdog,
        DesignId::Reentrant,
        DesignId::Redlock,
    ];

    /// The id as written in scenario files.
    pub fn as_str(self) -> &'static str {
        match self {
            DesignId::NaiveSetnx => "naive-setnx",
            DesignId::ExistsSet => "exists-set",
            DesignId::SetnxExpire => "setnx-expire",
            DesignId::GetsetTimestamp => "getset-timestamp",
            DesignId::SetPxDel => "set-px-del",
            DesignId::SetPxGetDel => "set-px-get-del",
            DesignId::GetExpireRenewal => "get-expire-renewal",
            DesignId::LuaRelease => "lua-release",
            DesignId::Watchdog => "watchdog",
            DesignId::Reentrant => "reentrant",
            DesignId::Redlock => "redlock",
            DesignId::Custom => "custom",
        }
    }

    /// Whether the design renews its lease while held (a watchdog task).
    pub fn renews(self) -> bool {
        matches!(
            self,
            DesignId::Watchdog | DesignId::Reentrant | DesignId::GetExpireRenewal
        )
    }

    /// Whether the design talks to several independent masters.
    pub fn multi_master(self) -> bool {
        matches!(self, DesignId::Redlock)
    }
}

impl fmt::Display for DesignId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for an unknown design id; it lists the known ones.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown design `{given}`; known designs: {}, custom", DesignId::ALL.map(|d| d.as_str()).join(", "))]
pub struct UnknownDesign {
    /// What was given.
    pub given: String,
}

impl FromStr for DesignId {
    type Err = UnknownDesign;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DesignId::ALL
            .into_iter()
            .chain([DesignId::Custom])
            .find(|d| d.as_str() == s)
            .ok_or_else(|| UnknownDesign {
                given: s.to_string(),
            })
    }
}

/// How the protected resource checks fencing tokens.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Fencing {
    /// No fencing token is taken or checked.
    #[default]
    Off,
    /// Only writes carry the token (Kleppmann's example); reads are unchecked.
    Writes,
    /// Every access, reads included, carries the token; a read raises the newest seen.
    All,
}

impl Fencing {
    /// Whether a fencing token is taken at acquire.
    pub fn enabled(self) -> bool {
        self != Fencing::Off
    }
}
