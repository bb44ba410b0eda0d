//! [`cli_enum!`]: one declaration for a CLI's own value set (a flag's choices).

/// Declares the enum of a CLI's own values, each variant written once next to its CLI spelling
/// (`Plan => "plan",`), and derives from that spelling everything the value sets share:
///
/// * `#[serde(rename = …)]` on every variant, so the JSON spelling is the CLI spelling (the enum
///   must derive `Serialize`, and may derive `Deserialize`);
/// * `ALL`, every value in declaration order (its doc comment comes after the enum, before
///   `const ALL;`);
/// * `as_str`, the CLI spelling, and `Display` printing it;
/// * with `impl FromStr else ParseError::Variant;` (doc comment before it): `FromStr`,
///   case-insensitive with surrounding whitespace ignored, accepting only these spellings and
///   rejecting anything else as that [`crate::ParseError`] variant holding the input (cut to 64
///   chars). Leave it out to write a `FromStr` with extra rules by hand.
///
/// What a value means (its unified mode) differs per CLI and stays a hand-written `impl`.
macro_rules! cli_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident {
            $( $(#[$variant_meta:meta])* $variant:ident => $spelling:literal, )+
        }
        $(#[$all_meta:meta])*
        const ALL;
        $(
            $(#[$parse_meta:meta])*
            impl FromStr else $error:path;
        )?
    ) => {
        $(#[$meta])*
        $vis enum $name {
            $( $(#[$variant_meta])* #[serde(rename = $spelling)] $variant, )+
        }

        impl $name {
            $(#[$all_meta])*
            pub const ALL: [$name; [$($spelling),+].len()] = [$($name::$variant),+];

            /// The CLI spelling.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( $name::$variant => $spelling, )+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        $(
            impl std::str::FromStr for $name {
                type Err = $crate::ParseError;

                $(#[$parse_meta])*
                fn from_str(s: &str) -> Result<Self, Self::Err> {
                    Self::ALL
                        .into_iter()
                        .find(|v| v.as_str().eq_ignore_ascii_case(s.trim()))
                        .ok_or_else(|| $error($crate::mode::truncate(s, 64)))
                }
            }
        )?
    };
}

pub(crate) use cli_enum;
