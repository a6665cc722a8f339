#!/usr/bin/env python3
"""Generate the mechanical forwarding impls of `DeterministicBackend<B>`.

Every method of every ops trait of the Burn version in use is forwarded explicitly to the inner
backend `B`, including the ones with default bodies: inheriting a default instead of forwarding
would silently replace `B`'s kernel (or, for autodiff, its only correct version).

The trait definitions are read from burn-backend's source (located through `cargo metadata`), so
regenerating after a Burn upgrade picks up new methods; `tests/forwarding_complete.rs` fails when
the committed files fall behind the source.

Usage: python3 scripts/gen_forwarding.py   (from the workspace root; then `cargo fmt`)
"""
import json
import os
import re
import subprocess
import sys

CRATE = "crates/burn-deterministic/src/ops"

# (source file inside burn-backend/src, trait name, output module)
TRAITS = [
    ("backend/ops/tensor.rs", "FloatTensorOps", "float_tensor.rs"),
    ("backend/ops/int_tensor.rs", "IntTensorOps", "int_tensor.rs"),
    ("backend/ops/bool_tensor.rs", "BoolTensorOps", "bool_tensor.rs"),
    ("backend/ops/modules/base.rs", "ModuleOps", "module.rs"),
    ("backend/ops/activation.rs", "ActivationOps", "activation.rs"),
    ("backend/ops/qtensor.rs", "QTensorOps", "qtensor.rs"),
    ("backend/ops/transaction.rs", "TransactionOps", "transaction.rs"),
]

# Methods whose body is not a plain forward. Everything else is `B::method(args)`.
OVERRIDES = {
    # The one place the decorator changes behaviour: see `crate::resize`.
    "interpolate": "crate::resize::interpolate::<B>(x, output_size, options)",
    "interpolate_backward": "crate::resize::interpolate_backward::<B>(x, grad, output_size, options)",
    # Ops whose native kernel adds in a varying order on some devices: see `crate::determinism`.
    "float_sum": "crate::determinism::float_sum::<B>(tensor)",
    "float_mean": "crate::determinism::float_mean::<B>(tensor)",
    "q_sum": "crate::determinism::q_sum::<B>(tensor)",
    "float_scatter_nd": (
        "crate::determinism::float_scatter_nd::<B>(_data, _indices, _values, _reduction)"
    ),
    "int_scatter_nd": "crate::determinism::int_scatter_nd::<B>(_data, _indices, _values, _reduction)",
    "deform_conv2d_backward": (
        "crate::determinism::deform_conv2d_backward::<B>"
        "(x, offset, weight, mask, bias, output_grad, options)"
    ),
    # `TransactionPrimitive<Self>` and `TransactionPrimitive<B>` are distinct types holding the
    # same primitives; rebuild it for `B` (the read order is kept by the caller, not here).
    "tr_execute": (
        "B::tr_execute(TransactionPrimitive::new(transaction.read_floats, "
        "transaction.read_qfloats, transaction.read_ints, transaction.read_bools))"
    ),
}


# Tensor-creation ops: every model creates tensors on its device before anything else, so this
# is where an autotuned device is announced (once) or refused under `strict`.
ANNOUNCE_AUTOTUNE = {
    "float_from_data",
    "float_random",
    "float_zeros",
    "float_ones",
    "float_full",
    "float_empty",
}


# Generic types that are distinct for `B` and `Self` though they hold the same primitives:
# converted by the functions in `ops/rebrand.rs`.
PARAM_REBRAND = {
    "QuantizationParametersPrimitive<B>": "super::rebrand::inner_qparams",
    "TensorPrimitive<B>": "super::rebrand::inner_primitive",
}
RETURN_REBRAND = {"TensorPrimitive<B>": "super::rebrand::outer_primitive"}


def burn_backend_src():
    meta = json.loads(
        subprocess.check_output(["cargo", "metadata", "--format-version", "1"], text=True)
    )
    for pkg in meta["packages"]:
        if pkg["name"] == "burn-backend":
            return pkg["version"], os.path.dirname(pkg["manifest_path"]) + "/src"
    sys.exit("burn-backend not found in cargo metadata")


def strip_comments(text):
    """Blank out comments and string/char literal contents, keeping offsets."""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = " "
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i) + 2
            for k in range(i, j):
                if out[k] != "\n":
                    out[k] = " "
            i = j
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, j):
                out[k] = " "
            i = j + 1
        elif text[i] == "'" and i + 2 < n and (text[i + 2] == "'" or text[i + 1] == "\\"):
            j = text.find("'", i + 2 if text[i + 1] == "\\" else i + 1)
            for k in range(i + 1, j):
                out[k] = " "
            i = j + 1
        else:
            i += 1
    return "".join(out)


def matching(text, open_at, open_ch="{", close_ch="}"):
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == open_ch:
            depth += 1
        elif text[i] == close_ch:
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced")


def split_top(text, sep=","):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([<{":
            depth += 1
        elif ch in ")]>}":
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def trait_methods(source, trait):
    """Yield (attrs, signature) for each fn of `pub trait <trait><B: Backend>`."""
    clean = strip_comments(source)
    m = re.search(r"pub trait %s\s*<B: Backend>\s*\{" % trait, clean)
    start = m.end() - 1
    end = matching(clean, start)
    i = start + 1
    attrs = []
    while i < end:
        if clean[i].isspace():
            i += 1
        elif clean.startswith("#[", i):
            j = matching(clean, i + 1, "[", "]")
            attrs.append(source[i : j + 1])
            i = j + 1
        elif re.match(r"(async\s+|unsafe\s+)*fn\b", clean[i:]):
            depth, j = 0, i
            while True:
                ch = clean[j]
                if ch in "([":
                    depth += 1
                elif ch in ")]":
                    depth -= 1
                elif depth == 0 and ch in ";{":
                    break
                j += 1
            sig = " ".join(source[i:j].split())
            if clean[j] == "{":
                j = matching(clean, j)
            yield [a for a in attrs if a.startswith("#[cfg")], sig
            attrs = []
            i = j + 1
        else:
            raise ValueError("unexpected item in %s at %r" % (trait, clean[i : i + 60]))


def struct_fields(all_sources):
    """Fields of the `pub struct Name<B: Backend>` result types, to rebuild them for `Self`."""
    structs = {}
    for text in all_sources:
        for m in re.finditer(r"pub struct (\w+)<B: Backend>\s*\{", text):
            body = text[m.end() : matching(text, m.end() - 1)]
            fields = re.findall(r"pub (\w+):", strip_comments(body))
            structs[m.group(1)] = fields
    return structs


def forward(sig, structs):
    name = re.search(r"fn (\w+)", sig).group(1)
    lt = sig.index("(", sig.index(name))
    close = matching(sig, lt, "(", ")")
    params = split_top(sig[lt + 1 : close])
    generics = ""
    gm = re.match(r"\s*<(.*)>\s*$", sig[sig.index(name) + len(name) : lt])
    if gm:
        generics = gm.group(1)
    args = []
    for p in params:
        pname = p.split(":")[0].replace("mut ", "").strip()
        ptype = p.split(":", 1)[1].strip() if ":" in p else ""
        if ptype in PARAM_REBRAND:
            pname = "%s(%s)" % (PARAM_REBRAND[ptype], pname)
        args.append(pname)
    turbofish = ""
    if generics and "impl " not in sig[lt:close]:
        names = []
        for g in split_top(generics):
            g = g.replace("const ", "")
            g = g.split(":")[0].strip()
            if not g.startswith("'"):
                names.append(g)
        if names:
            turbofish = "::<%s>" % ", ".join(names)
    new_sig = re.sub(r"\bmut (\w+):", r"\1:", sig)
    new_sig = re.sub(r"\bB\b", "Self", new_sig)
    new_sig = new_sig.replace("crate::", "burn_backend::")
    if name in OVERRIDES:
        body = OVERRIDES[name]
    else:
        call = "B::%s%s(%s)" % (name, turbofish, ", ".join(args))
        if sig.lstrip().startswith("async"):
            call += ".await"
        ret = sig[close + 1 :]
        rm = re.search(r"->\s*(\w+)<B>\s*$", ret)
        if re.sub(r"^\s*->\s*", "", ret).strip() in RETURN_REBRAND:
            body = "%s(%s)" % (RETURN_REBRAND[re.sub(r"^\s*->\s*", "", ret).strip()], call)
        elif rm and rm.group(1) in structs:
            fields = structs[rm.group(1)]
            body = "let inner = %s; %s { %s }" % (
                call,
                rm.group(1),
                ", ".join("%s: inner.%s" % (f, f) for f in fields),
            )
        else:
            body = call
    if name in ANNOUNCE_AUTOTUNE:
        body = "crate::determinism::autotune::on_use::<B>(device);\n        " + body
    return name, "    %s {\n        %s\n    }\n" % (new_sig, body)


HEADER = """// @generated by scripts/gen_forwarding.py from burn-backend {version} ({src}).
// Mechanical forwarding: every method calls the inner backend `B` unchanged{extra}.
// Do not edit by hand: change the generator and run it again.
#![allow(unused_imports, clippy::too_many_arguments)]

use crate::DeterministicBackend;
use burn_backend::ops::*;
use burn_backend::quantization::*;
use burn_backend::tensor::*;
use burn_backend::tensor::Device;
use burn_backend::*;
use core::future::Future;
use core::ops::Range;

impl<B: Backend> {trait}<Self> for DeterministicBackend<B> {{
"""


def main():
    version, src = burn_backend_src()
    sources = {}
    for root, _, files in os.walk(src):
        for f in files:
            if f.endswith(".rs"):
                path = os.path.join(root, f)
                sources[os.path.relpath(path, src)] = open(path).read()
    structs = struct_fields(sources.values())
    for rel, trait, out in TRAITS:
        methods = []
        for attrs, sig in trait_methods(sources[rel], trait):
            name, code = forward(sig, structs)
            methods.append("".join("    %s\n" % a for a in attrs) + code)
        overridden = [n for n in OVERRIDES if re.search(r"fn %s\b" % n, "".join(methods))]
        extra = ""
        if overridden:
            extra = ", except %s (see the override list in the generator)" % ", ".join(
                "`%s`" % n for n in overridden
            )
        text = HEADER.format(version=version, src=rel, trait=trait, extra=extra)
        text += "\n".join(methods) + "}\n"
        with open(os.path.join(CRATE, out), "w") as fh:
            fh.write(text)
        print("%s: %d methods -> %s" % (trait, len(methods), out))


if __name__ == "__main__":
    main()
