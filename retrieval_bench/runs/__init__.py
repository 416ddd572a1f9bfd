"""Run transforms shared by the stages and the measures (docs/architecture.md#layers):
document ids of files (``file_ids``) and the lifting of a chunk run to files
(``lifting``). Below both, so a stage never imports a measure to speak the run
format, and a measure never imports a stage."""
