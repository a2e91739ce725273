// Host memory that needs no CUDA pointer query. On a machine with a GPU every BufferView made from
// a raw pointer asks the CUDA runtime where it lives (cudaPointerGetAttributes): 0.17-0.33 µs a
// buffer on an H200 node (call_cost's buffer_view, 2026-11-26), as much as a small call itself,
// paid once per buffer of every call. Internal.
#pragma once

namespace mpidist::detail {

/// True only where `data` is certainly this process's own host memory, known without asking the
/// driver: on the calling thread's stack (between this call's frame and the stack's top), or in
/// the program's brk heap (malloc's main arena, where glibc serves buffers below its mmap
/// threshold). The kernel maps nothing else into either, so no CUDA allocation lies there. False
/// means "ask": anything else (mmap'd buffers, other threads' arenas, pinned, managed or device
/// memory).
bool surely_host(const void* data) noexcept;

}  // namespace mpidist::detail
