"""Exceptions: one class per cake_status_t value, each carrying cake_last_error_message().

Every class derives from CakeError; the ones that mean "the caller passed something wrong" also
derive from ValueError (LookupError for an unknown program), so ordinary Python handlers work.
"""

from __future__ import annotations

import enum


class Status(enum.IntEnum):
    """cake_status_t (include/cake.h). Values are stable; new codes are only appended."""

    SUCCESS = 0
    INVALID_ARGUMENT = 1
    ARCH_UNSUPPORTED = 2
    DRIVER_UNAVAILABLE = 3
    CUDA_ERROR = 4
    INSUFFICIENT_WORKSPACE = 5
    UNSUPPORTED_SHAPE = 6
    MISALIGNED = 7
    INVALID_HANDLE = 8
    PROGRAM_NOT_FOUND = 9
    INTERNAL_ERROR = 10
    NO_DEVICE = 11


class CakeError(RuntimeError):
    """A Cake call failed.

    Attributes:
        status: the cake_status_t value (int; a Status member when this binding knows it), or
            None when the failure is the binding's own (library or symbol missing).
        status_name: the library's name for it, e.g. "CAKE_STATUS_INVALID_ARGUMENT".
        message: cake_last_error_message() of the failing call: which argument, which value,
            what was expected.
        function: the C function that failed, when known.
    """

    def __init__(self, status, status_name: str, message: str, function: str | None = None):
        self.status = status
        self.status_name = status_name
        self.message = message
        self.function = function
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{status_name}: {message}" if message else f"{where}{status_name}")


class InvalidArgumentError(CakeError, ValueError):
    """CAKE_STATUS_INVALID_ARGUMENT: an argument is wrong; the message names it."""


class ArchUnsupportedError(CakeError):
    """CAKE_STATUS_ARCH_UNSUPPORTED: the device is older than sm_90 or no table loads."""


class DriverUnavailableError(CakeError):
    """CAKE_STATUS_DRIVER_UNAVAILABLE: libcuda.so.1 could not be loaded or initialised."""


class CudaError(CakeError):
    """CAKE_STATUS_CUDA_ERROR: a CUDA driver call failed; the message has its name."""


class InsufficientWorkspaceError(CakeError, ValueError):
    """CAKE_STATUS_INSUFFICIENT_WORKSPACE: the workspace is smaller than its size query says."""


class UnsupportedShapeError(CakeError, ValueError):
    """CAKE_STATUS_UNSUPPORTED_SHAPE: a size or width no program serves."""


class MisalignedError(CakeError, ValueError):
    """CAKE_STATUS_MISALIGNED: a pointer or stride breaks an alignment rule."""


class InvalidHandleError(CakeError, ValueError):
    """CAKE_STATUS_INVALID_HANDLE: a NULL or destroyed handle."""


class ProgramNotFoundError(CakeError, LookupError):
    """CAKE_STATUS_PROGRAM_NOT_FOUND: a forced program name is unknown or cannot serve."""


class InternalError(CakeError):
    """CAKE_STATUS_INTERNAL_ERROR: a broken invariant inside Cake; please report."""


class NoDeviceError(CakeError):
    """CAKE_STATUS_NO_DEVICE: the driver loaded but there is no such device ordinal."""


class LibraryNotFoundError(CakeError, OSError):
    """libcake.so could not be found or loaded (see cake.library_candidates())."""

    def __init__(self, message: str):
        CakeError.__init__(self, None, "CAKE_LIBRARY_NOT_FOUND", message)


class UnavailableError(CakeError, NotImplementedError):
    """The loaded libcake.so does not export this function, or its struct predates a field the
    caller set (an older build of the library)."""

    def __init__(self, function: str, library: str, field: str | None = None):
        if field is None:
            message = (f"{library} does not export {function} (built before it was added; "
                       "rebuild libcake)")
        else:
            # The library would ignore a field past the struct_size its init function sets, so
            # a non-default value there is refused rather than silently dropped.
            message = (f"{library} predates {field} (its {function} sets an older struct_size, "
                       "so the library would ignore it; use a newer libcake)")
        CakeError.__init__(self, None, "CAKE_FUNCTION_UNAVAILABLE", message, function)
        self.field = field


#: The exception class of each status. A status this binding does not know maps to CakeError.
ERROR_CLASSES: dict[int, type[CakeError]] = {
    Status.INVALID_ARGUMENT: InvalidArgumentError,
    Status.ARCH_UNSUPPORTED: ArchUnsupportedError,
    Status.DRIVER_UNAVAILABLE: DriverUnavailableError,
    Status.CUDA_ERROR: CudaError,
    Status.INSUFFICIENT_WORKSPACE: InsufficientWorkspaceError,
    Status.UNSUPPORTED_SHAPE: UnsupportedShapeError,
    Status.MISALIGNED: MisalignedError,
    Status.INVALID_HANDLE: InvalidHandleError,
    Status.PROGRAM_NOT_FOUND: ProgramNotFoundError,
    Status.INTERNAL_ERROR: InternalError,
    Status.NO_DEVICE: NoDeviceError,
}


def error_for(status: int, status_name: str, message: str, function: str | None = None) -> CakeError:
    """The exception for a failing status (not raised)."""
    try:
        status = Status(status)
    except ValueError:
        pass
    cls = ERROR_CLASSES.get(int(status), CakeError)
    return cls(status, status_name, message, function)
