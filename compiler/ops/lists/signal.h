/* Ops: DFT, STFT, window functions, MelWeightMatrix (see op_list.h). */
