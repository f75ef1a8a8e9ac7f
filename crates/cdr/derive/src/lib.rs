//! Derive macros for FerroDDS CDR types; use them through the re-exports in `ferrodds-cdr`.
//!
//! # Contract
//!
//! `#[derive(TopicType)]` on a struct with named fields implements
//! `ferrodds_cdr::CdrType` and `ferrodds_cdr::TopicType`. Generated code names everything by
//! its full path (`::ferrodds_cdr::...`), so users need no imports, but the crate must be
//! reachable as `ferrodds_cdr`.
//!
//! Container attributes (all optional):
//! - `#[dds(type_name = "Name")]`: DDS type name (default: the Rust struct name);
//! - `#[dds(extensibility = "final" | "appendable" | "mutable")]` (default `final`).
//!
//! Field attributes:
//! - `#[key]` or `#[dds(key)]`: key member;
//! - `#[dds(bound = N)]`: `string<N>` / `sequence<T, N>` on a `String` / `Vec<T>` field,
//!   checked when serializing and deserializing and used for the maximum key size;
//! - `#[dds(id = N)]`: member id (default: previous id + 1, starting at 0). Ids matter for
//!   mutable types (the member headers) and for XCDR2 key order.
//!
//! Field types must implement `CdrType`: primitives, `bool`, `char`, `String`, `Vec<T>`,
//! `[T; N]`, and other derived structs and enums. Members of mutable types must implement
//! `Default`: a member absent from the input takes its default value. Generic structs are
//! not supported.
//!
//! `#[derive(CdrEnum)]` on a fieldless enum implements `CdrType` as a 32-bit enumeration:
//! the discriminant (`as u32`) is written; unknown values fail to decode.
#![forbid(unsafe_code)]

use proc_macro::TokenStream;
use proc_macro2::TokenStream as TokenStream2;
use quote::quote;
use syn::{parse_macro_input, Data, DeriveInput, Fields, LitInt, LitStr};

/// Derives `CdrType` and `TopicType` for a struct with named fields (see the crate docs).
#[proc_macro_derive(TopicType, attributes(dds, key))]
pub fn derive_topic_type(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match topic_type(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// Derives `CdrType` for a fieldless enum encoded as a 32-bit enumeration.
#[proc_macro_derive(CdrEnum)]
pub fn derive_cdr_enum(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match cdr_enum(&input) {
        Ok(ts) => ts.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Ext {
    Final,
    Appendable,
    Mutable,
}

struct FieldInfo {
    ident: syn::Ident,
    ty: syn::Type,
    key: bool,
    bound: Option<LitInt>,
    id: u32,
}

fn topic_type(input: &DeriveInput) -> syn::Result<TokenStream2> {
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(TopicType)] does not support generic types",
        ));
    }
    let name = &input.ident;
    let mut type_name = name.to_string();
    let mut ext = Ext::Final;
    for attr in &input.attrs {
        if !attr.path().is_ident("dds") {
            continue;
        }
        attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("type_name") {
                type_name = meta.value()?.parse::<LitStr>()?.value();
                Ok(())
            } else if meta.path.is_ident("extensibility") {
                let lit: LitStr = meta.value()?.parse()?;
                ext = match lit.value().as_str() {
                    "final" => Ext::Final,
                    "appendable" => Ext::Appendable,
                    "mutable" => Ext::Mutable,
                    _ => {
                        return Err(syn::Error::new_spanned(
                            lit,
                            "expected \"final\", \"appendable\" or \"mutable\"",
                        ))
                    }
                };
                Ok(())
            } else {
                Err(meta.error("unknown dds attribute; expected type_name or extensibility"))
            }
        })?;
    }

    let Data::Struct(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            name,
            "#[derive(TopicType)] needs a struct (use #[derive(CdrEnum)] for enums)",
        ));
    };
    let Fields::Named(named) = &data.fields else {
        return Err(syn::Error::new_spanned(
            name,
            "#[derive(TopicType)] needs a struct with named fields",
        ));
    };

    let mut fields = Vec::new();
    let mut next_id: u32 = 0;
    for f in &named.named {
        let mut key = false;
        let mut bound = None;
        let mut id = None;
        for attr in &f.attrs {
            if attr.path().is_ident("key") {
                attr.meta.require_path_only()?;
                key = true;
            } else if attr.path().is_ident("dds") {
                attr.parse_nested_meta(|meta| {
                    if meta.path.is_ident("key") {
                        key = true;
                        Ok(())
                    } else if meta.path.is_ident("bound") {
                        let lit: LitInt = meta.value()?.parse()?;
                        lit.base10_parse::<usize>()?;
                        bound = Some(lit);
                        Ok(())
                    } else if meta.path.is_ident("id") {
                        let lit: LitInt = meta.value()?.parse()?;
                        let v = lit.base10_parse::<u32>()?;
                        if v > 0x0fff_ffff {
                            return Err(syn::Error::new_spanned(lit, "member id exceeds 28 bits"));
                        }
                        id = Some(v);
                        Ok(())
                    } else {
                        Err(meta.error("unknown dds field attribute; expected key, bound or id"))
                    }
                })?;
            }
        }
        let id = id.unwrap_or(next_id);
        if fields.iter().any(|x: &FieldInfo| x.id == id) {
            return Err(syn::Error::new_spanned(
                f,
                format!("duplicate member id {id}"),
            ));
        }
        next_id = id.wrapping_add(1);
        fields.push(FieldInfo {
            ident: f
                .ident
                .clone()
                .ok_or_else(|| syn::Error::new_spanned(f, "unnamed field"))?,
            ty: f.ty.clone(),
            key,
            bound,
            id,
        });
    }

    let krate = quote!(::ferrodds_cdr);
    let private = quote!(#krate::__private);
    let cdr = quote!(#krate::CdrType);
    let bounded = quote!(#krate::BoundedCdr);

    // Per-field code fragments.
    let ser = |f: &FieldInfo| {
        let (ident, ty) = (&f.ident, &f.ty);
        match &f.bound {
            Some(b) => quote!(<#ty as #bounded>::serialize_bounded(&self.#ident, #b, w)?;),
            None => quote!(<#ty as #cdr>::serialize(&self.#ident, w)?;),
        }
    };
    let ser_key = |f: &FieldInfo| {
        let (ident, ty) = (&f.ident, &f.ty);
        match &f.bound {
            Some(b) => quote!(<#ty as #bounded>::serialize_bounded(&self.#ident, #b, w)?;),
            None => quote!(<#ty as #cdr>::serialize_key(&self.#ident, w)?;),
        }
    };
    let de = |f: &FieldInfo| {
        let ty = &f.ty;
        match &f.bound {
            Some(b) => quote!(<#ty as #bounded>::deserialize_bounded(r, #b)?),
            None => quote!(<#ty as #cdr>::deserialize(r)?),
        }
    };
    // Decodes one member into the existing value's member (reusing its storage).
    let de_into = |f: &FieldInfo| {
        let (ident, ty) = (&f.ident, &f.ty);
        match &f.bound {
            Some(b) => {
                quote!(<#ty as #bounded>::deserialize_bounded_into(&mut this.#ident, r, #b)?;)
            }
            None => quote!(<#ty as #cdr>::deserialize_into(&mut this.#ident, r)?;),
        }
    };
    let max = |f: &FieldInfo, x2: bool, key: bool| {
        let ty = &f.ty;
        match (&f.bound, x2) {
            (Some(b), false) => quote!(#private::bounded_max(
                <#ty as #bounded>::ELEM_ALIGN, <#ty as #bounded>::ELEM_MAX_XCDR1, #b,
                <#ty as #bounded>::TRAILER, false, 8)),
            (Some(b), true) => quote!(#private::bounded_max(
                <#ty as #bounded>::ELEM_ALIGN, <#ty as #bounded>::ELEM_MAX_XCDR2, #b,
                <#ty as #bounded>::TRAILER, <#ty as #bounded>::DHEADER_XCDR2, 4)),
            (None, false) if key => quote!(<#ty as #cdr>::KEY_MAX_SIZE_XCDR1),
            (None, true) if key => quote!(<#ty as #cdr>::KEY_MAX_SIZE_XCDR2),
            (None, false) => quote!(<#ty as #cdr>::MAX_SIZE_XCDR1),
            (None, true) => quote!(<#ty as #cdr>::MAX_SIZE_XCDR2),
        }
    };
    let align_of = |f: &FieldInfo| {
        let ty = &f.ty;
        quote!(<#ty as #cdr>::ALIGN)
    };

    // Layout fold: `off = field(off, align, size, max_align)` over a list of fields.
    let fold = |list: &[&FieldInfo], start: usize, x2: bool, key: bool| {
        let max_align: usize = if x2 { 4 } else { 8 };
        let mut e = quote!(::core::option::Option::Some(#start));
        for f in list {
            let a = align_of(f);
            let m = max(f, x2, key);
            e = quote!(#private::field(#e, #a, #m, #max_align));
        }
        e
    };
    let all: Vec<&FieldInfo> = fields.iter().collect();
    let mut by_id: Vec<&FieldInfo> = fields.iter().collect();
    by_id.sort_by_key(|f| f.id);

    let field_align_max = all.iter().fold(quote!(1usize), |acc, f| {
        let a = align_of(f);
        quote!(#private::max_align(#acc, #a))
    });
    let min_sum = all.iter().fold(quote!(0usize), |acc, f| {
        let ty = &f.ty;
        quote!(#acc.saturating_add(<#ty as #cdr>::MIN_SIZE))
    });

    let (align, min_size, max1, max2) = match ext {
        Ext::Final => (
            field_align_max.clone(),
            min_sum.clone(),
            fold(&all, 0, false, false),
            fold(&all, 0, true, false),
        ),
        Ext::Appendable => (
            quote!(#private::max_align(#field_align_max, 4)),
            min_sum.clone(),
            fold(&all, 0, false, false),
            fold(&all, 4, true, false),
        ),
        Ext::Mutable => {
            let mut m1 = quote!(::core::option::Option::Some(0usize));
            let mut m2 = quote!(::core::option::Option::Some(4usize));
            for f in &all {
                let s1 = max(f, false, false);
                let s2 = max(f, true, false);
                m1 = quote!(#private::field(#m1, 4, #private::plus(#s1, 15), 8));
                m2 = quote!(#private::field(#m2, 4, #private::plus(#s2, 11), 4));
            }
            m1 = quote!(#private::field(#m1, 4, ::core::option::Option::Some(4), 8));
            (quote!(4usize), quote!(4usize), m1, m2)
        }
    };

    let keys: Vec<&FieldInfo> = fields.iter().filter(|f| f.key).collect();
    let is_keyed = !keys.is_empty();
    let key_x1: Vec<&FieldInfo> = if is_keyed { keys.clone() } else { all.clone() };
    let mut key_x2 = key_x1.clone();
    key_x2.sort_by_key(|f| f.id);
    let key_max1 = fold(&key_x1, 0, false, true);
    let key_max2 = fold(&key_x2, 0, true, true);
    let key_ser1: Vec<_> = key_x1.iter().map(|f| ser_key(f)).collect();
    let key_ser2: Vec<_> = key_x2.iter().map(|f| ser_key(f)).collect();

    let x2 = quote!(#krate::XcdrVersion::Xcdr2);

    // Key transcoding (see `CdrType::transcode_key`): `tc` moves one key member from reader
    // `rd` to writer `wr`; `direct` does a list in order; `reorder` reads in one member order
    // and writes in another (XCDR1 declaration order vs XCDR2 member-id order) by re-reading
    // from a saved reader position.
    let tc = |f: &FieldInfo, rd: TokenStream2, wr: TokenStream2| {
        let ty = &f.ty;
        match &f.bound {
            Some(b) => quote! {{
                let __v = <#ty as #bounded>::deserialize_bounded(#rd, #b)?;
                <#ty as #bounded>::serialize_bounded(&__v, #b, #wr)?;
            }},
            None => quote!(<#ty as #cdr>::transcode_key(#rd, #wr)?;),
        }
    };
    let direct = |list: &[&FieldInfo]| {
        let steps = list.iter().map(|f| tc(f, quote!(r), quote!(w)));
        quote!(#(#steps)*)
    };
    let skip_all = |list: &[&FieldInfo], rd: TokenStream2| {
        let steps = list.iter().map(|g| {
            let t = tc(g, rd.clone(), quote!(&mut __sw));
            quote! {{
                __scratch.clear();
                let mut __sw = #krate::CdrWriter::new(&mut __scratch, w.encoding());
                #t
            }}
        });
        quote!(#(#steps)*)
    };
    let reorder = |read: &[&FieldInfo], write: &[&FieldInfo]| {
        if read.iter().map(|f| f.id).eq(write.iter().map(|f| f.id)) {
            return direct(read);
        }
        let outs = write.iter().map(|f| {
            let pos = read.iter().position(|g| g.id == f.id).unwrap_or(0);
            let before = skip_all(&read[..pos], quote!(&mut __rr));
            let t = tc(f, quote!(&mut __rr), quote!(w));
            quote! {{
                let mut __rr = __start.clone();
                #before
                #t
            }}
        });
        let advance = skip_all(read, quote!(r));
        quote! {
            let __start = r.clone();
            let mut __scratch = ::std::vec::Vec::new();
            #(#outs)*
            #advance
        }
    };
    let tc_11 = direct(&key_x1);
    let tc_22 = direct(&key_x2);
    let tc_12 = reorder(&key_x1, &key_x2);
    let tc_21 = reorder(&key_x2, &key_x1);
    let transcode_key = quote! {
        fn transcode_key(
            r: &mut #krate::CdrReader<'_>,
            w: &mut #krate::CdrWriter<'_>,
        ) -> ::core::result::Result<(), #krate::CdrError> {
            match (r.version() == #x2, w.version() == #x2) {
                (false, false) => { #tc_11 }
                (false, true) => { #tc_12 }
                (true, false) => { #tc_21 }
                (true, true) => { #tc_22 }
            }
            ::core::result::Result::Ok(())
        }
    };
    // Key holder in, key form out.
    let transcode_holder = match ext {
        Ext::Final => quote!(),
        Ext::Appendable => quote! {
            fn transcode_key_holder(
                r: &mut #krate::CdrReader<'_>,
                w: &mut #krate::CdrWriter<'_>,
            ) -> ::core::result::Result<(), #krate::CdrError> {
                if r.version() == #x2 {
                    let scope = r.begin_dheader()?;
                    <Self as #cdr>::transcode_key(r, w)?;
                    r.end_scope(scope);
                    ::core::result::Result::Ok(())
                } else {
                    <Self as #cdr>::transcode_key(r, w)
                }
            }
        },
        Ext::Mutable => {
            // Members come by id in any order; an absent one takes its default value.
            let out = |list: &[&FieldInfo]| {
                let steps = list.iter().map(|f| {
                    let id = f.id;
                    let ty = &f.ty;
                    let t = tc(f, quote!(&mut __rr), quote!(w));
                    let dflt = match &f.bound {
                        Some(b) => quote!(<#ty as #bounded>::serialize_bounded(&__d, #b, w)?;),
                        None => quote!(<#ty as #cdr>::serialize_key(&__d, w)?;),
                    };
                    quote! {{
                        let mut __rr = __start.clone();
                        let __ms = __rr.begin_mutable()?;
                        let mut __found = false;
                        while let ::core::option::Option::Some(__m) = __rr.next_member()? {
                            if __m.id() == #id {
                                #t
                                __found = true;
                                __rr.end_member(__m);
                                break;
                            }
                            __rr.end_member(__m);
                        }
                        if !__found {
                            let __d: #ty = ::core::default::Default::default();
                            #dflt
                        }
                    }}
                });
                quote!(#(#steps)*)
            };
            let out1 = out(&key_x1);
            let out2 = out(&key_x2);
            quote! {
                fn transcode_key_holder(
                    r: &mut #krate::CdrReader<'_>,
                    w: &mut #krate::CdrWriter<'_>,
                ) -> ::core::result::Result<(), #krate::CdrError> {
                    let __start = r.clone();
                    if w.version() == #x2 { #out2 } else { #out1 }
                    let __ms = r.begin_mutable()?;
                    while let ::core::option::Option::Some(__m) = r.next_member()? {
                        r.end_member(__m);
                    }
                    r.end_mutable(__ms);
                    ::core::result::Result::Ok(())
                }
            }
        }
    };
    // Key holder: the key members (or all, if none is a key) with the type's framing.
    let holder = match ext {
        Ext::Final => quote!(#cdr::serialize_key(self, w)),
        Ext::Appendable => quote! {
            if w.version() == #x2 {
                let d = w.begin_dheader();
                #cdr::serialize_key(self, w)?;
                w.end_dheader(d)
            } else {
                #cdr::serialize_key(self, w)
            }
        },
        Ext::Mutable => {
            let members = key_x1.iter().map(|f| {
                let id = f.id;
                let mu = f.key;
                let ty = &f.ty;
                let s = ser_key(f);
                quote! {
                    let m = w.begin_member(#id, #mu, <#ty as #cdr>::PRIMITIVE_SIZE)?;
                    #s
                    w.end_member(m)?;
                }
            });
            quote! {
                let t = w.begin_mutable();
                #(#members)*
                w.end_mutable(t)
            }
        }
    };

    let sers: Vec<_> = all.iter().map(|f| ser(f)).collect();
    let idents: Vec<_> = all.iter().map(|f| &f.ident).collect();
    let des: Vec<_> = all.iter().map(|f| de(f)).collect();
    let des_into: Vec<_> = all.iter().map(|f| de_into(f)).collect();

    let (serialize, deserialize) = match ext {
        Ext::Final => (
            quote!(#(#sers)* ::core::result::Result::Ok(())),
            quote!(::core::result::Result::Ok(Self { #(#idents: #des,)* })),
        ),
        Ext::Appendable => (
            quote! {
                if w.version() == #x2 {
                    let d = w.begin_dheader();
                    #(#sers)*
                    w.end_dheader(d)
                } else {
                    #(#sers)*
                    ::core::result::Result::Ok(())
                }
            },
            quote! {
                if r.version() == #x2 {
                    let scope = r.begin_dheader()?;
                    let v = Self { #(#idents: #des,)* };
                    r.end_scope(scope);
                    ::core::result::Result::Ok(v)
                } else {
                    ::core::result::Result::Ok(Self { #(#idents: #des,)* })
                }
            },
        ),
        Ext::Mutable => {
            let members = all.iter().map(|f| {
                let id = f.id;
                let mu = f.key;
                let ty = &f.ty;
                let s = ser(f);
                quote! {
                    let m = w.begin_member(#id, #mu, <#ty as #cdr>::PRIMITIVE_SIZE)?;
                    #s
                    w.end_member(m)?;
                }
            });
            let slots: Vec<_> = all
                .iter()
                .map(|f| quote::format_ident!("__slot_{}", f.ident))
                .collect();
            let tys: Vec<_> = all.iter().map(|f| &f.ty).collect();
            let ids: Vec<_> = all.iter().map(|f| f.id).collect();
            (
                quote! {
                    let t = w.begin_mutable();
                    #(#members)*
                    w.end_mutable(t)
                },
                quote! {
                    #(let mut #slots: ::core::option::Option<#tys> = ::core::option::Option::None;)*
                    let ms = r.begin_mutable()?;
                    while let ::core::option::Option::Some(m) = r.next_member()? {
                        match m.id() {
                            #(#ids => { #slots = ::core::option::Option::Some(#des); })*
                            other => {
                                if m.must_understand() {
                                    return ::core::result::Result::Err(
                                        #krate::CdrError::UnknownMustUnderstand(other),
                                    );
                                }
                            }
                        }
                        r.end_member(m);
                    }
                    r.end_mutable(ms);
                    ::core::result::Result::Ok(Self {
                        #(#idents: #slots.unwrap_or_default(),)*
                    })
                },
            )
        }
    };

    // `deserialize_into` for final and appendable structs: member by member into the
    // existing value. Mutable types keep the default (members may be absent or in any
    // order, so the whole value is rebuilt).
    let deserialize_into = match ext {
        Ext::Final => Some(quote!(#(#des_into)* ::core::result::Result::Ok(()))),
        Ext::Appendable => Some(quote! {
            if r.version() == #x2 {
                let scope = r.begin_dheader()?;
                #(#des_into)*
                r.end_scope(scope);
            } else {
                #(#des_into)*
            }
            ::core::result::Result::Ok(())
        }),
        Ext::Mutable => None,
    };
    let deserialize_into = deserialize_into.map(|body| {
        quote! {
            #[inline]
            fn deserialize_into(
                &mut self,
                r: &mut #krate::CdrReader<'_>,
            ) -> ::core::result::Result<(), #krate::CdrError> {
                r.enter_nested()?;
                let res = (|this: &mut Self, r: &mut #krate::CdrReader<'_>|
                    -> ::core::result::Result<(), #krate::CdrError> {
                    #body
                })(self, r);
                r.leave_nested();
                res
            }
        }
    });

    let ext_tok = match ext {
        Ext::Final => quote!(#krate::Extensibility::Final),
        Ext::Appendable => quote!(#krate::Extensibility::Appendable),
        Ext::Mutable => quote!(#krate::Extensibility::Mutable),
    };

    Ok(quote! {
        #[automatically_derived]
        impl #cdr for #name {
            const ALIGN: usize = #align;
            const MIN_SIZE: usize = #min_size;
            const MAX_SIZE_XCDR1: ::core::option::Option<usize> = #max1;
            const MAX_SIZE_XCDR2: ::core::option::Option<usize> = #max2;
            const KEY_MAX_SIZE_XCDR1: ::core::option::Option<usize> = #key_max1;
            const KEY_MAX_SIZE_XCDR2: ::core::option::Option<usize> = #key_max2;

            #[inline]
            fn serialize(
                &self,
                w: &mut #krate::CdrWriter<'_>,
            ) -> ::core::result::Result<(), #krate::CdrError> {
                #serialize
            }

            #[inline]
            fn deserialize(
                r: &mut #krate::CdrReader<'_>,
            ) -> ::core::result::Result<Self, #krate::CdrError> {
                // Bounds recursion (a struct holding a `Vec` of itself) on untrusted input.
                r.enter_nested()?;
                let res = (|r: &mut #krate::CdrReader<'_>| -> ::core::result::Result<Self, #krate::CdrError> {
                    #deserialize
                })(r);
                r.leave_nested();
                res
            }

            #deserialize_into

            fn serialize_key_holder(
                &self,
                w: &mut #krate::CdrWriter<'_>,
            ) -> ::core::result::Result<(), #krate::CdrError> {
                #holder
            }

            fn serialize_key(
                &self,
                w: &mut #krate::CdrWriter<'_>,
            ) -> ::core::result::Result<(), #krate::CdrError> {
                if w.version() == #x2 {
                    #(#key_ser2)*
                } else {
                    #(#key_ser1)*
                }
                ::core::result::Result::Ok(())
            }

            #transcode_key

            #transcode_holder
        }

        #[automatically_derived]
        impl #krate::TopicType for #name {
            const TYPE_NAME: &'static str = #type_name;
            const EXTENSIBILITY: #krate::Extensibility = #ext_tok;
            const IS_KEYED: bool = #is_keyed;
        }
    })
}

fn cdr_enum(input: &DeriveInput) -> syn::Result<TokenStream2> {
    let name = &input.ident;
    if !input.generics.params.is_empty() {
        return Err(syn::Error::new_spanned(
            &input.generics,
            "#[derive(CdrEnum)] does not support generic types",
        ));
    }
    let Data::Enum(data) = &input.data else {
        return Err(syn::Error::new_spanned(
            name,
            "#[derive(CdrEnum)] needs an enum",
        ));
    };
    let mut variants = Vec::new();
    for v in &data.variants {
        if !matches!(v.fields, Fields::Unit) {
            return Err(syn::Error::new_spanned(
                v,
                "CdrEnum variants must be fieldless",
            ));
        }
        variants.push(&v.ident);
    }
    let krate = quote!(::ferrodds_cdr);
    Ok(quote! {
        #[automatically_derived]
        impl #krate::CdrType for #name {
            const ALIGN: usize = 4;
            const PRIMITIVE_SIZE: usize = 4;
            const XCDR2_ELEMENT_DHEADER: bool = false;
            const MIN_SIZE: usize = 4;
            const MAX_SIZE_XCDR1: ::core::option::Option<usize> = ::core::option::Option::Some(4);
            const MAX_SIZE_XCDR2: ::core::option::Option<usize> = ::core::option::Option::Some(4);

            #[inline]
            fn serialize(
                &self,
                w: &mut #krate::CdrWriter<'_>,
            ) -> ::core::result::Result<(), #krate::CdrError> {
                w.write_u32(match self { #(Self::#variants => Self::#variants as u32,)* });
                ::core::result::Result::Ok(())
            }

            #[inline]
            fn deserialize(
                r: &mut #krate::CdrReader<'_>,
            ) -> ::core::result::Result<Self, #krate::CdrError> {
                let v = r.read_u32()?;
                #(if v == Self::#variants as u32 { return ::core::result::Result::Ok(Self::#variants); })*
                ::core::result::Result::Err(#krate::CdrError::InvalidEnum(v))
            }
        }
    })
}
