//! The method a `call`, `callvirt` or `newobj` instruction names: its display name as the IL
//! names it (the declared method, with the type arguments of the call site), and the MethodDef
//! of the same module it designates when there is one.

use clrprof_sys as sys;

use super::super::signature::{MethodSig, TypeSig, parse_method_spec};
use super::FunctionName;
use super::namer::Namer;
use super::namer::{Scope, merge_args};
use super::render::{SigRenderer, TypeScope};
use crate::error::{Error, Result};
use crate::ids::{ModuleId, Token};
use crate::info::ProfilerInfo;

/// The method a call instruction names; see [`Namer::get_call_target`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallTarget {
    /// Its declaring type with the call site's type arguments: `Demo.Box<int>`,
    /// `System.Collections.Generic.List<T>` (inside a generic method, its parameters).
    pub type_name: String,
    /// The method name with the call site's type arguments: `Put`, `Pick<string>`.
    pub method_name: String,
    /// The parameter types in parentheses (for a conversion operator followed by its
    /// return type).
    pub signature: String,
    /// The MethodDef of the same module the instruction designates, when it names one of the
    /// module's own methods (directly, through a MemberRef on one of its types, or through an
    /// instantiation of one). Before any virtual dispatch: `callvirt Base.M` designates
    /// `Base.M`.
    pub definition: Option<Token>,
}

impl CallTarget {
    /// `type_name.method_name(signature)`, or `method_name(signature)` for a global function.
    pub fn full_name(&self) -> String {
        if self.type_name.is_empty() {
            format!("{}{}", self.method_name, self.signature)
        } else {
            format!("{}.{}{}", self.type_name, self.method_name, self.signature)
        }
    }

    fn from_definition(name: FunctionName) -> CallTarget {
        CallTarget {
            type_name: name.type_name,
            method_name: name.method_name,
            signature: name.signature,
            definition: Some(name.token),
        }
    }
}

/// Renders types where the calling method's generic parameters may appear (an instantiation
/// `Helper<T>` inside `Run<T>`).
struct Caller<'a> {
    scope: &'a Scope<'a>,
    class_args: Vec<String>,
    method_args: Vec<String>,
}

impl Caller<'_> {
    fn render(&self, t: &TypeSig) -> Result<String> {
        SigRenderer {
            scope: self.scope,
            class_args: &self.class_args,
            method_args: &self.method_args,
        }
        .render(t)
    }
}

impl Namer {
    /// The method that the `call`, `callvirt` or `newobj` instruction with operand `token`
    /// (a MethodDef, MemberRef or MethodSpec of `module`) names, in the method `caller` (a
    /// MethodDef of `module`, whose generic parameters an instantiation may use).
    ///
    /// A call naming one of the module's own non-generic methods is named as
    /// [`Namer::get_method_name`] names the method; others are named from the instruction's
    /// own metadata: parameters passed by reference print `ref` (the `[Out]` marks of
    /// another module's method are not read), and generic arguments are those of the call
    /// site (`Pick<string>`, where the runtime would run `Pick<__Canon>`).
    pub fn get_call_target(
        &self,
        info: &ProfilerInfo,
        module: ModuleId,
        token: Token,
        caller: Token,
    ) -> Result<CallTarget> {
        let import = self.metadata_required(info, module)?;
        let scope = Scope {
            namer: self,
            module,
            import: &import,
        };
        let caller_props = import.get_method_props(caller)?;
        let caller_sig = MethodSig::parse(&caller_props.signature)?;
        let class_declared = scope.generic_params(caller_props.class)?;
        let class_path = scope.type_path(caller_props.class)?;
        let method_declared = if caller_sig.generic_param_count > 0 {
            scope.generic_params(caller)?
        } else {
            Default::default()
        };
        let ctx = Caller {
            scope: &scope,
            class_args: merge_args(&class_declared, &[], class_path.arity(), "!"),
            method_args: merge_args(
                &method_declared,
                &[],
                caller_sig.generic_param_count as usize,
                "!!",
            ),
        };
        match token.table() {
            sys::mdtMethodDef => self.definition_target(info, &scope, token, None),
            sys::mdtMemberRef => self.member_ref_target(info, &scope, &ctx, token, None),
            sys::mdtMethodSpec => {
                let spec = import.get_method_spec_props(token)?;
                let args = parse_method_spec(&spec.instantiation)?
                    .iter()
                    .map(|a| ctx.render(a))
                    .collect::<Result<Vec<_>>>()?;
                match spec.parent.table() {
                    sys::mdtMethodDef => {
                        self.definition_target(info, &scope, spec.parent, Some(&args))
                    }
                    sys::mdtMemberRef => {
                        self.member_ref_target(info, &scope, &ctx, spec.parent, Some(&args))
                    }
                    _ => Err(not_a_method(spec.parent)),
                }
            }
            _ => Err(not_a_method(token)),
        }
    }

    /// A MethodDef of the module, with the call site's method type arguments if any.
    fn definition_target(
        &self,
        info: &ProfilerInfo,
        scope: &Scope<'_>,
        method: Token,
        method_args: Option<&[String]>,
    ) -> Result<CallTarget> {
        let name = self.method_name(info, scope.module, method, None, method_args)?;
        Ok(CallTarget::from_definition(name))
    }

    fn member_ref_target(
        &self,
        info: &ProfilerInfo,
        scope: &Scope<'_>,
        ctx: &Caller<'_>,
        member_ref: Token,
        method_args: Option<&[String]>,
    ) -> Result<CallTarget> {
        let props = scope.import.get_member_ref_props(member_ref)?;
        let sig = MethodSig::parse(&props.signature)?;
        // The declaring type as the call site names it, the type arguments its signature's
        // `!n` stand for, and the TypeDef of this module it is an instance of, if any.
        let (type_name, class_args, own_type) = match props.parent.table() {
            sys::mdtTypeDef | sys::mdtTypeRef => {
                let path = scope.type_path(props.parent)?;
                let declared = if props.parent.table() == sys::mdtTypeDef {
                    scope.generic_params(props.parent)?
                } else {
                    Default::default()
                };
                let args = merge_args(&declared, &[], path.arity(), "!");
                let own = (props.parent.table() == sys::mdtTypeDef).then_some(props.parent);
                (path.display(&args), args, own)
            }
            sys::mdtTypeSpec => {
                let t = TypeSig::parse(&scope.type_spec(props.parent)?)?;
                match &t {
                    TypeSig::GenericInst { generic, args, .. } => {
                        let args = args
                            .iter()
                            .map(|a| ctx.render(a))
                            .collect::<Result<Vec<_>>>()?;
                        let own = (generic.table() == sys::mdtTypeDef).then_some(*generic);
                        (scope.type_path(*generic)?.display(&args), args, own)
                    }
                    other => (ctx.render(other)?, Vec::new(), None),
                }
            }
            // A vararg call site: the MemberRef carries the call's extra arguments.
            sys::mdtMethodDef => {
                return self.definition_target(info, scope, props.parent, method_args);
            }
            // A global function of another module.
            _ => (String::new(), Vec::new(), None),
        };
        let definition = match own_type {
            Some(type_def) => {
                scope
                    .import
                    .find_method(type_def, &props.name, Some(&props.signature))?
            }
            None => None,
        };
        // One of the module's own methods, on a type without type arguments and without its
        // own: named as its definition is.
        if let Some(def) = definition
            && class_args.is_empty()
            && sig.generic_param_count == 0
        {
            return self.definition_target(info, scope, def, None);
        }
        let method_shown = merge_args(
            &[],
            method_args.unwrap_or(&[]),
            sig.generic_param_count as usize,
            "!!",
        );
        let mut method_name = props.name.clone();
        if !method_shown.is_empty() {
            method_name.push('<');
            method_name.push_str(&method_shown.join(", "));
            method_name.push('>');
        }
        let renderer = SigRenderer {
            scope,
            class_args: &class_args,
            method_args: &method_shown,
        };
        let mut signature = renderer.params(&sig, &[])?;
        if matches!(props.name.as_str(), "op_Implicit" | "op_Explicit") {
            signature.push_str(" -> ");
            signature.push_str(&renderer.render(&sig.ret)?);
        }
        Ok(CallTarget {
            type_name,
            method_name,
            signature,
            definition,
        })
    }
}

fn not_a_method(token: Token) -> Error {
    Error::InvalidData {
        context: "call target",
        reason: format!("{token} is not a MethodDef, MemberRef or MethodSpec"),
    }
}
