#!/usr/bin/env python3
"""Generates protocol_autogen.h from messages.json.

One description of every channel message gives: the Op enum, request and reply structs with
explicit padding and static_asserts on size and offsets, per-message traits, OpName(), trace
formatting, and the host's dispatch: Dispatch() copies a request out of the (hostile) message
body and checks its size; Invoke() resolves the request's handles to the session's objects,
refuses unknown, foreign and reused handles (and work on a context a fault poisoned) before
any handler runs, and calls the handler's Handle() overload with the objects.

Usage: gen_protocol.py messages.json output.h
"""

import json
import re
import sys

SCALARS = {
    "u8": ("uint8_t", 1),
    "u16": ("uint16_t", 2),
    "u32": ("uint32_t", 4),
    "i32": ("int32_t", 4),
    "u64": ("uint64_t", 8),
    "i64": ("int64_t", 8),
    "f32": ("float", 4),
    "handle": ("uint64_t", 8),
    "dptr": ("uint64_t", 8),
    "char": ("char", 1),
}

ARRAY_RE = re.compile(r"^(\w+)\[(\d+)\]$")


def parse_type(spec):
    match = ARRAY_RE.match(spec)
    if match:
        base, count = match.group(1), int(match.group(2))
    else:
        base, count = spec, None
    if base not in SCALARS:
        raise SystemExit(f"unknown field type '{spec}'")
    ctype, size = SCALARS[base]
    return base, ctype, size, count


def layout(fields):
    """Returns (members, size): members are (decl, name, offset, base, count); explicit padding."""
    members = []
    offset = 0
    pad_index = 0
    for spec, name, *_ in fields:
        base, ctype, size, count = parse_type(spec)
        align = size
        if offset % align:
            pad = align - offset % align
            members.append((f"uint8_t pad{pad_index}[{pad}] = {{}};", None, offset, None, None))
            pad_index += 1
            offset += pad
        decl = f"{ctype} {name}" + (f"[{count}]" if count else "") + "{};"
        members.append((decl, name, offset, base, count))
        offset += size * (count or 1)
    if offset % 8:
        pad = 8 - offset % 8
        members.append((f"uint8_t pad{pad_index}[{pad}] = {{}};", None, offset, None, None))
        offset += pad
    return members, offset


def emit_struct(out, struct_name, msg, fields, is_reply):
    members, size = layout(fields)
    out.append(f"struct {struct_name} {{")
    out.append(f"  static constexpr Op kOp = Op::k{msg['name']};")
    if not is_reply:
        kind = msg["kind"]
        out.append(f"  static constexpr bool kAsync = {'true' if kind == 'async' else 'false'};")
        out.append(f"  static constexpr bool kHostToGuest = {'true' if kind == 'host' else 'false'};")
        out.append(f"  static constexpr bool kHasPayload = {'true' if 'payload' in msg else 'false'};")
        out.append(f"  using Reply = {msg['name']}Reply;")
    else:
        out.append(f"  static constexpr bool kHasPayload = {'true' if 'reply_payload' in msg else 'false'};")
    for decl, _, _, _, _ in members:
        out.append(f"  {decl}")
    if size == 0:
        out.append("  uint64_t unused = 0;")
        size = 8
    out.append("};")
    out.append(f"static_assert(std::is_trivially_copyable_v<{struct_name}>);")
    out.append(f"static_assert(sizeof({struct_name}) == {size});")
    for _, name, offset, _, _ in members:
        if name:
            out.append(f"static_assert(offsetof({struct_name}, {name}) == {offset});")
    out.append("")
    return members


def emit_trace(out, struct_name, members):
    out.append(f"inline void TraceFields(std::ostream& os, const {struct_name}& m) {{")
    first = True
    for _, name, _, base, count in members:
        if not name:
            continue
        sep = "" if first else " "
        first = False
        if base == "char" and count:
            out.append(f'  os << "{sep}{name}=\\"" << std::string_view(m.{name}, strnlen(m.{name}, {count})) << "\\"";')
        elif count and count > 4:
            out.append(f'  os << "{sep}{name}=[{count}]";')
        elif count:
            items = ' << "," << '.join(f"+m.{name}[{i}]" for i in range(count))
            out.append(f'  os << "{sep}{name}=(" << {items} << ")";')
        elif base in ("handle", "dptr"):
            out.append(f'  os << "{sep}{name}=0x" << std::hex << m.{name} << std::dec;')
        else:
            out.append(f'  os << "{sep}{name}=" << +m.{name};')
    if first:
        out.append("  (void)os; (void)m;")
    out.append("}")
    out.append("")


def parse_objects(spec):
    """The kinds of objects handles name: [(kind, scope)] in the order messages.json gives."""
    kinds = []
    for kind, desc in spec["objects"].items():
        if desc.get("scope") not in ("session", "context"):
            raise SystemExit(f"object kind '{kind}': scope must be 'session' or 'context'")
        kinds.append((kind, desc["scope"]))
    return kinds


def camel(kind):
    return "".join(part.capitalize() for part in kind.split("_"))


def handle_fields(msg, scopes):
    """The request's handle fields: (name, kind, role) with role 'use', 'optional' or 'new'."""
    out = []
    for field in msg.get("request", []):
        if field[0] != "handle":
            continue
        if len(field) < 3:
            raise SystemExit(f"{msg['name']}.{field[1]}: a request's handle names its object kind")
        words = field[2].split()
        role = "use"
        if len(words) == 2 and words[0] == "new":
            role, kind = "new", words[1]
        elif len(words) == 1 and words[0].endswith("?"):
            role, kind = "optional", words[0][:-1]
        elif len(words) == 1:
            kind = words[0]
        else:
            raise SystemExit(f"{msg['name']}.{field[1]}: bad object spec '{field[2]}'")
        if kind not in scopes:
            raise SystemExit(f"{msg['name']}.{field[1]}: unknown object kind '{kind}'")
        out.append((field[1], kind, role))
    return out


def emit_invoke(out, msg, scopes):
    """Invoke() for one guest-to-host request: resolve its handles, then Handle()."""
    name = msg["name"]
    fields = handle_fields(msg, scopes)
    scope_field = None  # the context that context-scoped handles live in
    for field, kind, role in fields:
        if kind == "context" and role == "use":
            scope_field = field
    out.append("template <typename Handler, typename Payload>")
    out.append(f"typename Handler::Result Invoke(Handler& handler, const {name}Request& request,")
    out.append("                                const Payload& payload) {")
    args = []
    resolved = set()
    for field, kind, role in fields:
        tag = f"HandleTag<HandleKind::k{camel(kind)}>{{}}"
        scoped = scopes[kind] == "context"
        if scoped and scope_field not in resolved:
            raise SystemExit(f"{name}.{field}: a {kind} handle needs the message's context first")
        resolved.add(field)
        scope = f", *{scope_field}" if scoped else ""
        unknown = f"handler.Unknown(request, HandleKind::k{camel(kind)}, request.{field}{scope})"
        if role == "new":
            out.append(f"  if (!handler.Fresh({tag}, request.{field}{scope})) {{")
            out.append(f"    return handler.Taken(request, HandleKind::k{camel(kind)}, request.{field});")
            out.append("  }")
        elif role == "optional":
            out.append(f"  auto* {field} =")
            out.append(f"      request.{field} == 0 ? nullptr : handler.Find({tag}, request.{field}{scope});")
            out.append(f"  if (request.{field} != 0 && {field} == nullptr) {{")
            out.append(f"    return {unknown};")
            out.append("  }")
            args.append(field)
        else:
            out.append(f"  auto* {field} = handler.Find({tag}, request.{field}{scope});")
            out.append(f"  if ({field} == nullptr) return {unknown};")
            args.append(f"*{field}")
    if msg.get("refused_on_fault"):
        if scope_field is None:
            raise SystemExit(f"{name}: refused_on_fault needs the message's context")
        out.append(f"  if (const Code fault = handler.Fault(*{scope_field}); fault != Code::kOk) {{")
        out.append("    return handler.Answer(request, fault);")
        out.append("  }")
    out.append(f"  return handler.Handle({', '.join(['request', 'payload'] + args)});")
    out.append("}")
    out.append("")


def emit_op_switch(out, messages, signature, case, otherwise):
    """A function that switches on `op`: `case(message)` gives each case's body."""
    out.append(signature + " {")
    out.append("  switch (static_cast<Op>(op)) {")
    for m in messages:
        out.append(f"    case Op::k{m['name']}: {{")
        out.extend(case(m))
        out.append("    }")
    out.append("  }")
    out.append(f"  return {otherwise};")
    out.append("}")
    out.append("")


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        spec = json.load(f)
    messages = spec["messages"]
    ids = [m["id"] for m in messages]
    if len(ids) != len(set(ids)):
        raise SystemExit("duplicate message ids")
    names = [m["name"] for m in messages]
    if len(names) != len(set(names)):
        raise SystemExit("duplicate message names")

    kinds = parse_objects(spec)
    scopes = dict(kinds)

    out = [
        "// Generated by src/protocol/gen_protocol.py from messages.json. Do not edit.",
        "#pragma once",
        "",
        "#include <cstddef>",
        "#include <cstdint>",
        "#include <cstring>",
        "#include <ostream>",
        "#include <span>",
        "#include <string_view>",
        "#include <type_traits>",
        "",
        '#include "common/status.h"',
        "",
        "namespace pvgpu::protocol {",
        "",
        f"inline constexpr uint32_t kProtocolVersion = {spec['version']};",
        "",
        "enum class Op : uint32_t {",
    ]
    for m in messages:
        out.append(f"  k{m['name']} = {m['id']},")
    out.append("};")
    out.append("")
    out.append("inline const char* OpName(Op op) {")
    out.append("  switch (op) {")
    for m in messages:
        out.append(f'    case Op::k{m["name"]}: return "{m["name"]}";')
    out.append("  }")
    out.append('  return "Unknown";')
    out.append("}")
    out.append("")

    for m in messages:
        if m.get("doc"):
            out.append(f"// {m['name']}: {m['doc']}")
        # The reply type is declared first so that the request can name it.
        reply_fields = [["i32", "result"]] + m.get("reply", [])
        reply_members = emit_struct(out, f"{m['name']}Reply", m, reply_fields, True)
        req_members = emit_struct(out, f"{m['name']}Request", m, m.get("request", []), False)
        emit_trace(out, f"{m['name']}Request", req_members)
        emit_trace(out, f"{m['name']}Reply", reply_members)

    out.append("// The kinds of objects that requests' handles name (messages.json \"objects\").")
    out.append("enum class HandleKind : uint32_t {")
    for kind, _ in kinds:
        out.append(f"  k{camel(kind)},")
    out.append("};")
    out.append("")
    out.append("inline const char* HandleKindName(HandleKind kind) {")
    out.append("  switch (kind) {")
    for kind, _ in kinds:
        text = kind.replace("_", " ")
        out.append(f'    case HandleKind::k{camel(kind)}: return "{text}";')
    out.append("  }")
    out.append('  return "unknown";')
    out.append("}")
    out.append("")
    out.append("// A kind as a type, for the handler's Find() and Fresh() overloads.")
    out.append("template <HandleKind K>")
    out.append("struct HandleTag {")
    out.append("  static constexpr HandleKind kKind = K;")
    out.append("};")
    out.append("")
    out.append("// Invoke(handler, request, payload): resolves the request's handles in field order and")
    out.append("// calls handler.Handle(request, payload, objects...) with a reference for each object the")
    out.append("// request uses and a pointer (nullptr for handle 0) for each optional one; a handle the")
    out.append("// request creates is only checked to be free. Handles of a context's objects (scope")
    out.append("// \"context\") are looked up in the request's context. What the handler provides:")
    out.append("//   using Result = ...;")
    out.append("//   T* Find(HandleTag<K>, uint64_t id [, Context& scope]);  the object, or nullptr")
    out.append("//   bool Fresh(HandleTag<K>, uint64_t id [, Context& scope]);  nonzero and free")
    out.append("//   Result Unknown(const Request&, HandleKind, uint64_t id [, Context& scope]);")
    out.append("//                                          the request names no such object")
    out.append("//   Result Taken(const Request&, HandleKind, uint64_t id);  its new handle is not free")
    out.append("//   Code Fault(Context& context);  the fault that poisons a context (kOk: none), for")
    out.append("//                                  the requests marked refused_on_fault")
    out.append("//   Result Answer(const Request&, Code);    answers without running a handler")
    out.append("//   Result Handle(const Request&, const Payload&, objects...);")
    out.append("")
    for m in messages:
        if m["kind"] != "host":
            emit_invoke(out, m, scopes)

    out.append("enum class DecodeError { kNone, kUnknownOp, kBadSize, kWrongDirection };")
    out.append("")
    out.append("// Copies the fixed request out of `body` (hostile bytes), checks its size and direction,")
    out.append("// and invokes the handler on it (Invoke above). Guest-to-host ops only.")
    out.append("template <typename Handler>")

    def dispatch_case(m):
        if m["kind"] == "host":
            return ["      return DecodeError::kWrongDirection;"]
        cond = "body.size() < sizeof(Req)" if "payload" in m else "body.size() != sizeof(Req)"
        return [f"      using Req = {m['name']}Request;",
                f"      if ({cond}) return DecodeError::kBadSize;",
                "      Req request;",
                "      std::memcpy(&request, body.data(), sizeof(Req));",
                "      *result = Invoke(handler, request, body.subspan(sizeof(Req)));",
                "      return DecodeError::kNone;"]

    emit_op_switch(out, messages,
                   "DecodeError Dispatch(Handler& handler, uint32_t op, std::span<const uint8_t> body,\n"
                   "                     typename Handler::Result* result)",
                   dispatch_case, "DecodeError::kUnknownOp")
    out.append("// Formats a guest-to-host request for trace logs.")

    def trace_case(m):
        return [f"      {m['name']}Request request;",
                "      if (body.size() < sizeof(request)) return false;",
                "      std::memcpy(&request, body.data(), sizeof(request));",
                f'      os << "{m["name"]}(";',
                "      TraceFields(os, request);",
                '      os << ")";',
                "      return true;"]

    emit_op_switch(out, messages,
                   "inline bool TraceRequest(std::ostream& os, uint32_t op, std::span<const uint8_t> body)",
                   trace_case, "false")
    out.append("}  // namespace pvgpu::protocol")
    out.append("")

    text = "\n".join(out)
    try:
        with open(sys.argv[2], encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
