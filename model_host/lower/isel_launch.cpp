// Instruction selection: the device runtime of CUDA dynamic parallelism
// (CDP2, the __cudaCDP2* functions nvcc -rdc=true calls), as machine code
// over the launch queue in the device heap (launch::device_queue,
// docs/isa.md "Device-side launches").  A launch is a heap block holding a
// record and the child's parameters; cudaLaunchDevice links it into the
// queue, and the backend runs the queued grids after the launching grid
// (model_host/backends/interpreter.cpp).
#include "model_host/lower/isel.h"

namespace qgpu::machine::lowering {
namespace dq = launch::device_queue;

namespace {
bool is_device_runtime(const std::string& name) { return name.rfind("__cudaCDP2", 0) == 0; }
}  // namespace

// The per-thread last-error word, zeroed at kernel entry when the module
// declares any device-runtime function.
void Lowerer::start_device_runtime() {
  if (!opts_.device_launches) return;
  bool any = false;
  for (const ptx::Function& f : m_.functions) any |= !f.has_body && is_device_runtime(f.name);
  if (!any) return;
  last_error_slot_ = local_alloc(4, 4);
  st(Space::Local, K(last_error_slot_), 0, 4, K(0));
}

// Links record `rec` (a heap block's user address) into the queue in
// stream `stream`: the error code (0, or cudaErrorLaunchMaxDepthExceeded /
// cudaErrorLaunchPendingCountExceeded, the record then left unlinked).
uint32_t Lowerer::enqueue(Operand rec, Operand stream) {
  const uint32_t base = uint32_t(shape_.heap_base);
  uint32_t err = op(Op::MOV, K(0));
  uint32_t deep = new_label(), shallow = new_label(), done = new_label();
  br(opr(Op::SLEU, K(dq::kMaxDepth), R(ld(Space::Global, K(base + dq::kDepth), 0, 4, false))), deep, shallow);
  place(deep);
  opd(err, Op::MOV, K(launch::kLaunchMaxDepthExceeded));
  jmp(done);
  place(shallow);
  st(Space::Global, rec, dq::kStream, 4, stream);
  serialize_lanes([&] {
    uint32_t full = new_label(), room = new_label(), linked = new_label();
    Operand pending = R(ld(Space::Global, K(base + dq::kPending), 0, 4, false));
    Operand limit = R(ld(Space::Global, K(base + dq::kLimit), 0, 4, false));
    br(opr(Op::SLEU, limit, pending), full, room);
    place(full);
    opd(err, Op::MOV, K(launch::kLaunchPendingCountExceeded));
    jmp(linked);
    place(room);
    Operand head = R(ld(Space::Global, K(base + dq::kHead), 0, 4, false));
    st(Space::Global, rec, dq::kNext, 4, head);
    st(Space::Global, K(base + dq::kHead), 0, 4, rec);
    st(Space::Global, K(base + dq::kPending), 0, 4, opr(Op::ADD, pending, K(1)));
    place(linked);
  });
  place(done);
  return err;
}

bool Lowerer::lower_device_runtime(const ptx::Instr& in, const std::string& name) {
  if (!is_device_runtime(name)) return false;
  if (!opts_.device_launches)
    unsupported(in, "calls `" + name +
                        "` (the CUDA device runtime: device-side kernel launches, dynamic parallelism); this "
                        "machine runs no device-side launches: run it with --backend interpreter");
  const ptx::Operand& rets = in.ops[0];
  const ptx::Operand& args = in.ops[2];
  auto slot = [&](const ptx::Operand& o) {
    if (o.kind != ptx::Operand::Kind::Sym) unsupported(in, "passes an argument that is not a .param variable");
    ptx::Space sp;
    return symbol_address(in, o.sym, &sp);
  };
  auto arg = [&](size_t i, uint32_t off = 0) {
    if (i >= args.elems.size()) unsupported(in, "calls `" + name + "` with an unexpected argument list");
    return R(ld(Space::Local, K(slot(args.elems[i])), off, 4, false));
  };
  auto ret = [&](Operand lo, bool wide) {
    if (rets.elems.size() != 1) return;
    const uint32_t at = slot(rets.elems[0]);
    st(Space::Local, K(at), 0, 4, lo);
    if (wide) st(Space::Local, K(at), 4, 4, K(0));
  };
  // Records a runtime call's error as the thread's last error, and returns it.
  auto result = [&](Operand e) {
    Operand err = opr(Op::MOV, e);
    uint32_t set = new_label(), keep = new_label();
    br(err, set, keep);
    place(set);
    st(Space::Local, K(last_error_slot_), 0, 4, err);
    place(keep);
    ret(err, false);
  };
  const uint32_t base = uint32_t(shape_.heap_base);
  const bool queue = shape_.heap_bytes > dq::kHeapHeader;

  if (name == "__cudaCDP2GetParameterBufferV2") {
    // (entry, grid dim3, block dim3, dynamic shared bytes) -> the parameter
    // buffer, or NULL.  Its size: the most parameter bytes of any kernel the
    // module declares (the entry is not always known statically).
    uint64_t most = 0;
    for (const ptx::Function& f : m_.functions)
      if (f.is_entry)
        for (const ptx::Var& v : f.params) most = std::max<uint64_t>(most, v.offset + v.size);
    uint32_t rec = heap_alloc(K(uint32_t(dq::kRecordBytes + most)), K(0));
    uint32_t got = new_label(), none = new_label();
    br(R(rec), got, none);
    place(got);
    st(Space::Global, R(rec), dq::kNext, 4, K(0));
    st(Space::Global, R(rec), dq::kKind, 4, K(dq::kKindLaunch));
    st(Space::Global, R(rec), dq::kEntry, 4, arg(0));
    for (uint32_t i = 0; i < 3; ++i) st(Space::Global, R(rec), dq::kGrid + 4 * i, 4, arg(1, 4 * i));
    for (uint32_t i = 0; i < 3; ++i) st(Space::Global, R(rec), dq::kBlock + 4 * i, 4, arg(2, 4 * i));
    st(Space::Global, R(rec), dq::kSmem, 4, arg(3));
    st(Space::Global, R(rec), dq::kStream, 4, K(0));
    opd(rec, Op::ADD, R(rec), K(dq::kRecordBytes));
    uint32_t done = new_label();
    jmp(done);
    // The heap is full: NULL, and the thread's last error says so.
    place(none);
    st(Space::Local, K(last_error_slot_), 0, 4, K(launch::kMemoryAllocation));
    place(done);
    ret(R(rec), true);
    return true;
  }
  if (name == "__cudaCDP2LaunchDeviceV2") {
    // (parameter buffer, stream) -> error.
    Operand buf = arg(0);
    uint32_t err = op(Op::MOV, K(launch::kInvalidValue));
    uint32_t go = new_label(), skip = new_label();
    br(buf, go, skip);
    place(go);
    if (queue) opd(err, Op::MOV, R(enqueue(opr(Op::SUB, buf, K(dq::kRecordBytes)), arg(1))));
    place(skip);
    result(R(err));
    return true;
  }
  if (name == "__cudaCDP2MemcpyAsync") {
    // (dst, src, bytes, kind, stream) -> error: a copy record in the queue,
    // in stream order with the launches.  Device code copies device memory
    // only (cudaMemcpyDeviceToDevice or cudaMemcpyDefault).
    Operand kind = arg(3);
    Operand ok = opr(Op::AND, opr(Op::OR, opr(Op::SEQ, kind, K(3)), opr(Op::SEQ, kind, K(4))),
                     opr(Op::SEQ, arg(2, 4), K(0)));
    uint32_t err = op(Op::MOV, K(launch::kInvalidValue));
    uint32_t go = new_label(), done = new_label();
    br(ok, go, done);
    place(go);
    uint32_t rec = heap_alloc(K(dq::kRecordBytes), K(0));
    opd(err, Op::MOV, K(launch::kMemoryAllocation));
    uint32_t got = new_label();
    br(R(rec), got, done);
    place(got);
    st(Space::Global, R(rec), dq::kKind, 4, K(dq::kKindCopy));
    st(Space::Global, R(rec), dq::kEntry, 4, K(0));
    st(Space::Global, R(rec), dq::kCopyDst, 4, arg(0));
    st(Space::Global, R(rec), dq::kCopySrc, 4, arg(1));
    st(Space::Global, R(rec), dq::kCopyBytes, 4, arg(2));
    opd(err, Op::MOV, R(enqueue(R(rec), arg(4))));
    place(done);
    result(R(err));
    return true;
  }
  if (name == "__cudaCDP2StreamCreateWithFlags") {
    // (stream*, flags) -> error.  A stream is a 16-byte heap block (its
    // address the handle); device streams must be cudaStreamNonBlocking.
    Operand p = arg(0);
    uint32_t err = op(Op::MOV, K(launch::kInvalidValue));
    uint32_t go = new_label(), done = new_label();
    br(opr(Op::SEQ, arg(1), K(1)), go, done);
    place(go);
    uint32_t h = heap_alloc(K(16), K(0));
    opd(err, Op::MOV, K(launch::kMemoryAllocation));
    uint32_t got = new_label();
    br(R(h), got, done);
    place(got);
    dispatch_generic(p, [&](Space sp, Operand a) {
      st(sp, a, 0, 4, R(h));
      st(sp, a, 4, 4, K(0));
    });
    opd(err, Op::MOV, K(0));
    place(done);
    result(R(err));
    return true;
  }
  if (name == "__cudaCDP2StreamDestroy") {
    // Work queued in the stream still runs (the queue does not refer to it).
    Operand s = arg(0);
    uint32_t go = new_label(), done = new_label();
    br(opr(Op::SLTU, K(0xFF), s), go, done);
    place(go);
    heap_free(s);
    place(done);
    result(K(0));
    return true;
  }
  if (name == "__cudaCDP2Malloc") {
    // (void**, bytes) -> error: device malloc.
    Operand p = arg(0);
    uint32_t r = heap_alloc(arg(1, 0), arg(1, 4));
    dispatch_generic(p, [&](Space sp, Operand a) {
      st(sp, a, 0, 4, R(r));
      st(sp, a, 4, 4, K(0));
    });
    result(opr(Op::SEL, R(r), K(0), K(launch::kMemoryAllocation)));
    return true;
  }
  if (name == "__cudaCDP2Free") {
    heap_free(arg(0));
    result(K(0));
    return true;
  }
  if (name == "__cudaCDP2GetLastError" || name == "__cudaCDP2PeekAtLastError") {
    Operand e = R(ld(Space::Local, K(last_error_slot_), 0, 4, false));
    ret(e, false);
    if (name == "__cudaCDP2GetLastError") st(Space::Local, K(last_error_slot_), 0, 4, K(0));
    return true;
  }
  if (name == "__cudaCDP2GetErrorString" || name == "__cudaCDP2GetErrorName") {
    // The machine keeps no error strings in device memory: a thread that
    // gets here stops the launch (cudaErrorNotSupported).
    vc_.code.push_back({VI::Trap, {}, 0, 0, 0, uint32_t(launch::kNotSupported)});
    place(new_label());
    ret(K(0), true);
    return true;
  }
  (void)base;
  unsupported(in, "calls `" + name +
                      "`, a CUDA device-runtime function the machine does not have (it has device-side launches "
                      "with cudaGetParameterBuffer/cudaLaunchDevice, device streams, cudaMemcpyAsync, "
                      "cudaMalloc/cudaFree and cudaGetLastError/cudaPeekAtLastError)");
}

}  // namespace qgpu::machine::lowering
