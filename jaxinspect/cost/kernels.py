"""GPU kernel events joined to the instructions that launched them.

On a GPU, XLA runs the program's kernels inside a CUDA graph: every kernel event of JAX's
profiler names the graph's thunk in ``args.hlo_op`` (``command_buffer_1``), and only the
event's own name says which kernel ran (``gemm_fusion_dot_13``: the instruction's name with
each character outside ``[A-Za-z0-9_$]`` made ``_``, as XLA names kernels for NVPTX).

XLA also compiles one kernel for fusions that are the same computation and names it after
the first: at 96 transformer blocks, ``gemm_fusion_dot_1248`` runs 96 times a program run,
once for each block's copy, and no kernel is named after the other 95. Those copies (equal
fused computations and attributes up to names: ``opcache.canonical_names``) share the
kernel's launches in launch order, which is their schedule order where, as in a stacked
model, each copy waits for the one before; copies that do not are the same kernel on the
same shapes, whichever of them a launch is given to.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from jaxinspect.xla.hlotext import HloInstr, HloText, parse_module
from jaxinspect.xla.opcache import canonical_names
from jaxinspect.xla.xlacost import callees, strip_metadata

_NOT_IN_KERNEL_NAMES = re.compile(r"[^A-Za-z0-9_$]")


def kernel_name(instruction: str) -> str:
    """The name XLA's GPU backend gives the kernel of ``instruction``."""
    return _NOT_IN_KERNEL_NAMES.sub("_", instruction)


@dataclass(frozen=True, slots=True)
class KernelNames:
    """A module's instructions, and for each kernel name the instructions it may run for.

    Attributes:
        instructions: Every instruction name of the module.
        named: Kernel name -> the instruction it is named after. Kernel names two
            instructions could give are left out.
        copies: Kernel name -> that instruction and those that are the same computation, in
            schedule order.
    """

    instructions: frozenset[str]
    named: dict[str, str]
    copies: dict[str, tuple[str, ...]]


def module_kernel_names(text: str) -> KernelNames:
    """The kernel names of HLO module ``text`` (the optimized module, printed)."""
    hlo = parse_module(text)
    names: list[str] = []
    classes: dict[str, list[str]] = {}
    class_of: dict[str, str] = {}
    for comp in hlo.computations:
        for instr in comp.instructions:
            names.append(instr.name)
            if instr.called:  # a fusion (or a call): its kernel may be shared with copies
                key = _structure(hlo, instr)
                classes.setdefault(key, []).append(instr.name)
                class_of[instr.name] = key
    by_kernel: dict[str, str | None] = {}
    for name in names:
        kernel = kernel_name(name)
        by_kernel[kernel] = None if kernel in by_kernel else name
    named = {kernel: name for kernel, name in by_kernel.items() if name is not None}
    copies = {
        kernel: (name,) if name not in class_of else tuple(classes[class_of[name]])
        for kernel, name in named.items()
    }
    return KernelNames(frozenset(names), named, copies)


def _structure(hlo: HloText, instr: HloInstr) -> str:
    """``instr``'s line from its opcode on and every computation it calls, up to names."""
    parts = [f"{instr.opcode} {instr.shape} {instr.attributes}"]
    for comp in callees(hlo, instr):
        parts += (inner.text for inner in comp.instructions)
    return canonical_names(strip_metadata("\n".join(parts)))


class KernelJoin:
    """Kernel events' instructions, one event at a time in launch order."""

    def __init__(self, kernels: KernelNames, launched: Iterable[str]) -> None:
        """``launched``: the names of every kernel the trace holds."""
        self.kernels = kernels
        launched = set(launched)
        self._launches: dict[str, int] = {}
        self._sharing: dict[str, tuple[str, ...]] = {}
        for kernel, members in kernels.copies.items():
            if kernel not in launched:
                continue
            # A copy whose own kernel ran did not share this one.
            named = kernels.named[kernel]
            self._sharing[kernel] = tuple(
                m for m in members if m == named or kernel_name(m) not in launched
            )

    def instruction(self, hlo_op: str, kernel: str) -> str:
        """The instruction an event ran: its ``hlo_op`` where that is one, else the next of
        the instructions sharing its kernel; ``hlo_op`` where the kernel's name is unknown."""
        if hlo_op in self.kernels.instructions:
            return hlo_op
        sharing = self._sharing.get(kernel)
        if sharing is None:
            return hlo_op
        n = self._launches.get(kernel, 0)
        self._launches[kernel] = n + 1
        return sharing[n % len(sharing)]
