"""peers.py's peer loaders: FLA and mamba_ssm from their carried pure-Python sources
(--peers-dir), Cake through its Python binding; a peer that does not load is reported, not
fatal."""

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def load_fla(peers_dir):
    if peers_dir not in sys.path:
        sys.path.insert(0, peers_dir)
    from fla.modules.fused_norm_gate import layer_norm_gated_bwd, layer_norm_gated_fwd, rms_norm_gated
    import fla
    return rms_norm_gated, layer_norm_gated_fwd, layer_norm_gated_bwd, getattr(fla, "__version__", "?")


def load_cake():
    """Cake's Python binding from this checkout (bindings/python); libcake.so from $CAKE_LIBRARY
    (a file or a directory) or the build directory (bindings/python/cake/_lib.py)."""
    path = os.path.join(ROOT, "bindings", "python")
    if path not in sys.path:
        sys.path.insert(0, path)
    import cake
    return cake


def load_mamba(peers_dir):
    import importlib.util
    path = os.path.join(peers_dir, "mamba_ssm_peer", "layernorm_gated.py")
    spec = importlib.util.spec_from_file_location("mamba_ssm_layernorm_gated", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    version = "?"
    vfile = os.path.join(peers_dir, "mamba_ssm_peer", "VERSION")
    if os.path.exists(vfile):
        version = open(vfile).read().strip()
    return mod, version


def load_peers(torch, args, peers, run):
    """The peers asked for and Cake's binding (paired with every peer unless --no-pair), their
    versions in run.meta: (fla, mamba, cake, cake Handle), None for any that is not loaded."""
    fla = mamba = None
    if args.family in ("all", "normgate") and "fla" in peers:
        try:
            fla = load_fla(args.peers_dir)
            run.meta["versions"]["fla"] = fla[3]
        except Exception as e:  # noqa: BLE001 - reported, not fatal
            print("peers: FLA not loaded: %r" % e, flush=True)
            run.meta["versions"]["fla"] = "not loaded: %r" % e
    if args.family in ("all", "normgate") and "mamba" in peers:
        try:
            mamba = load_mamba(args.peers_dir)
            run.meta["versions"]["mamba_ssm"] = mamba[1]
        except Exception as e:  # noqa: BLE001
            print("peers: mamba_ssm not loaded: %r" % e, flush=True)
            run.meta["versions"]["mamba_ssm"] = "not loaded: %r" % e

    cake = cake_h = None
    if not args.no_pair or "cake" in peers:
        try:
            cake = load_cake()
            cake_h = cake.Handle(torch.cuda.current_device())
            run.meta["versions"]["cake"] = "%d.%d.%d" % tuple(cake.version())
            run.meta["cake_library"] = cake.library_path()
        except Exception as e:  # noqa: BLE001
            print("peers: Cake's Python binding not loaded: %r" % e, flush=True)
            run.meta["versions"]["cake"] = "not loaded: %r" % e
            cake = None
    return fla, mamba, cake, cake_h
